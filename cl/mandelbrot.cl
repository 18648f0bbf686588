/*
 * Mandelbrot iteration counts: irregular work (points inside the set run max_iter
 * iterations, points far outside stop at once). Global-indexed over (width, height), so a
 * launch may be split by rows with a global work offset.
 */

__kernel void mandelbrot(__global uint *out, int width, int height, float x0, float y0,
                         float dx, float dy, int max_iter)
{
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    float cr = x0 + (float)x * dx, ci = y0 + (float)y * dy;
    float zr = 0.0f, zi = 0.0f;
    int i = 0;
    while (i < max_iter && zr * zr + zi * zi <= 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        i++;
    }
    out[(size_t)y * (size_t)width + (size_t)x] = (uint)i;
}
