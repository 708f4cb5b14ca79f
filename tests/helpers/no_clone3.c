/* tests/helpers/no_clone3.c - runs a program under a seccomp filter that makes clone3 fail with
 * ENOSYS, as Docker's default profile and some older sandboxes do; every other system call is
 * allowed. The tests use it to check that runboxd, finding clone3 refused, turns its cgroups off
 * and goes on with rlimits.
 *
 *   no_clone3 PROGRAM [ARG...]
 *
 * Exit status: PROGRAM's (it is exec'd), or 127 when the filter cannot be installed or PROGRAM
 * cannot be run. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "no_clone3: add this architecture's AUDIT_ARCH_* value"
#endif

#ifndef __NR_clone3
#define __NR_clone3 435 /* the same number on every architecture that has it */
#endif

int main(int argc, char *argv[])
{
    struct sock_filter filter[] = {
        /* A call of another architecture (e.g. the x32 or i386 ABI) passes unchanged. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};

    if (argc < 2) {
        fprintf(stderr, "usage: no_clone3 PROGRAM [ARG...]\n");
        return 127;
    }
    /* Needed to install a filter without CAP_SYS_ADMIN; it does not stop a root program from
     * dropping its privileges. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
        fprintf(stderr, "no_clone3: cannot install the seccomp filter: %s\n", strerror(errno));
        return 127;
    }
    execv(argv[1], argv + 1);
    fprintf(stderr, "no_clone3: cannot run %s: %s\n", argv[1], strerror(errno));
    return 127;
}
