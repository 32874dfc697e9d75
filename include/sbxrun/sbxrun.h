/* SPDX-License-Identifier: MIT */
/*
 * libsbxrun: run untrusted build, test and verification jobs in sandboxes.
 *
 * Include this umbrella header only; it pulls in every public header. Anything
 * not declared by it is not API. See doc/ and the man pages in doc/man/.
 */
#ifndef SBXRUN_SBXRUN_H
#define SBXRUN_SBXRUN_H

#include <sbxrun/version.h>
#include <sbxrun/common.h>
#include <sbxrun/client.h>
#include <sbxrun/sandbox.h>
#include <sbxrun/command.h>
#include <sbxrun/policy.h>
#include <sbxrun/netpolicy.h>
#include <sbxrun/redact.h>
#include <sbxrun/transcript.h>
#include <sbxrun/patch.h>
#include <sbxrun/job.h>

#endif /* SBXRUN_SBXRUN_H */
