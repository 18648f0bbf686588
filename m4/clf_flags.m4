# CLF_CHECK_CFLAG(FLAG, ACTION-IF-OK, ACTION-IF-NOT)
# Does the C compiler accept FLAG (as an error if not: -Werror)?
AC_DEFUN([CLF_CHECK_CFLAG], [
    AS_VAR_PUSHDEF([clf_var], [clf_cv_cflag_$1])
    AC_CACHE_CHECK([whether $CC accepts $1], [clf_var], [
        clf_save_CFLAGS=$CFLAGS
        CFLAGS="$CFLAGS -Werror $1"
        AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
                       [AS_VAR_SET([clf_var], [yes])], [AS_VAR_SET([clf_var], [no])])
        CFLAGS=$clf_save_CFLAGS])
    AS_VAR_IF([clf_var], [yes], [$2], [$3])
    AS_VAR_POPDEF([clf_var])
])
