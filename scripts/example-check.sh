#!/bin/sh
# The example batch's verify: command (examples/batches.yaml, job digest).
# A real check would test the job's work (go test ./..., a linter, a diff
# that must not be empty); any non-zero exit fails the attempt and its
# output is told to the retry. This one only shows the folder it runs in.
echo "checked in $(pwd)"
exit 0
