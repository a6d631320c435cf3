#!/bin/sh
# Runs tl-sim with the given arguments and prints its exit status after its output, so that one
# PASS_REGULAR_EXPRESSION checks both the summary and the status (ctest ignores the status of a
# test that has one).
#
#   run.sh TL-SIM [ARGS...]
"$@"
echo "exit status $?"
