#!/usr/bin/env bash
# The smallest agent: answers every line it reads with that line. A city created with
# `ctl init DIR --start-command examples/agents/echo.sh` has it as its default agent command.
while IFS= read -r line; do printf 'echo: %s\n' "$line"; done
