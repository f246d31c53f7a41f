/* Preloaded into llama.cpp's process by bench/vs_llamacpp.py --llama-no-amx: refuses
 * Linux's AMX permission request (arch_prctl ARCH_REQ_XCOMP_PERM), so that ggml's
 * AMX initialisation fails and llama.cpp runs its other CPU paths (REPACK and the
 * rest stay on). Its AMX path died with SIGILL at the first tile load on a worker
 * thread on the Intel Xeon of docs/perf.md's AMX section. Build:
 *   cc -shared -fPIC -O2 -o no_amx_preload.so bench/no_amx_preload.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long arg[6];
    for (int i = 0; i < 6; ++i) arg[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_arch_prctl && arg[0] == 0x1023 /* ARCH_REQ_XCOMP_PERM */) {
        errno = EPERM;
        return -1;
    }
    static long (*real)(long, ...) = 0;
    if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(number, arg[0], arg[1], arg[2], arg[3], arg[4], arg[5]);
}
