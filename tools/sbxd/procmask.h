/* SPDX-License-Identifier: MIT */
/*
 * procmask: the parts of /proc every sandbox gets read-only or masked, as
 * an OCI runtime does. sbxd-init applies them (those this kernel has);
 * sbxd --check names the same.
 */
#ifndef SBXD_PROCMASK_H
#define SBXD_PROCMASK_H

static const char *const procmask_read_only[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/bus", "/proc/fs",
                                                 "/proc/irq"};
static const char *const procmask_files[] = {"/proc/kcore",       "/proc/keys",        "/proc/key-users",
                                             "/proc/timer_list",  "/proc/sched_debug", "/proc/latency_stats",
                                             "/proc/timer_stats"};
static const char *const procmask_dirs[] = {"/proc/acpi", "/proc/scsi", "/proc/asound"};

#endif
