/* SPDX-License-Identifier: MIT */
/* command_int: what the job layer sets on the commands it runs. */
#ifndef SBX_COMMAND_INT_H
#define SBX_COMMAND_INT_H

#include <stdbool.h>

#include <sbxrun/command.h>

struct rules;

/* The command is checked and redacted by its owner (a job), not by the
 * client's settings: no client policy check; its output is redacted with
 * rules (a reference the command takes over; NULL: not redacted). Before
 * the start. */
void sbx__command_own_safety(sbx_command *cmd, struct rules *rules);

/* Whether the command may be running in the sandbox: its id is known, or
 * its start was sent and not refused (no answer, a 5xx, a cut stream). A
 * command that may have started is never sent again. */
bool sbx__command_may_have_started(const sbx_command *cmd);

#endif /* SBX_COMMAND_INT_H */
