#!/bin/bash
# The wire-agent suite: soft-wire's programs through the user's transport
# agent (SWRDMA_WIRE_AGENT=1, issue 33), with a process stopped and one
# killed in the middle of a pair; see compat-tests/soft-wire/run.sh.
WIRE_AGENT=1 exec bash "$(dirname "$0")/../soft-wire/run.sh" "$@"
