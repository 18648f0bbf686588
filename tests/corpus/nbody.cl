/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): an all-pairs n-body step in the style of the n-body codes
 * found in OpenCL tutorials, written here: the helper functions the kernels call loop over
 * all get_global_size(0) bodies and scale by get_num_groups(0), so the range's sizes are
 * needed outside kernel functions. Two kernels: a leapfrog step, and the kinetic energy per
 * work-group.
 */

#define SOFTENING 0.01f

float4 accel_on(float4 p, __global float4 *pos)
{
    float4 a = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    for (int j = 0; j < get_global_size(0); j++) {
        float4 q = pos[j];
        float4 d = q - p;
        d.w = 0.0f;
        float invr = rsqrt(d.x * d.x + d.y * d.y + d.z * d.z + SOFTENING);
        a += (q.w * invr * invr * invr) * d;
    }
    return a;
}

float mean_over_groups(float group_total)
{
    return group_total / (float)get_num_groups(0);
}

__kernel void nbody_step(__global float4 *pos_old, __global float4 *pos_new, __global float4 *vel, float dt)
{
    int i = get_global_id(0);
    float4 p = pos_old[i];
    float4 v = vel[i];
    float4 a = accel_on(p, pos_old);
    a.w = 0.0f;
    p += dt * v + 0.5f * dt * dt * a;
    v += dt * a;
    pos_new[i] = p;
    vel[i] = v;
}

__kernel void kinetic(__global float4 *pos, __global float4 *vel, __global float *energy, __local float *scratch)
{
    int l = get_local_id(0);
    float4 v = vel[get_global_id(0)];
    scratch[l] = 0.5f * pos[get_global_id(0)].w * (v.x * v.x + v.y * v.y + v.z * v.z);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        float s = 0.0f;
        for (int k = 0; k < get_local_size(0); k++)
            s += scratch[k];
        energy[get_group_id(0)] = mean_over_groups(s);
    }
}
