#!/usr/bin/env bash
# A tiny agent for the `text` protocol: every line it reads is a turn, and it answers `echo: <line>`.
#   ask <question>   asks `? <question>` and waits for the answer line (a pending interaction), then `answer: <it>`
#   sleep <seconds>  answers after a while (something to interrupt: an interrupt ends the sleep, not the agent)
#   flood <n>        writes n lines at once
#   exit <code>      ends with that exit code
#   run <command>    runs the shell command where the agent works (as a coding agent's tool would), its output the answer
# With ECHO_READY set it prints that marker when it starts and after every answer (a provider's
# `ready_prompt_prefix`), so a turn ends at once instead of after a quiet spell.
marker="${ECHO_READY:-}"
# An interrupt can come as soon as a line is written to it, before its sleep has begun: it is remembered for the
# rest of the turn, so that a sleep it came before never starts.
interrupted=
trap 'interrupted=1; printf "interrupted\n"' INT
if [ -n "$marker" ]; then printf '%s\n' "$marker"; fi
while IFS= read -r line; do
  case "$line" in
    ask\ *)
      printf '? %s\n' "${line#ask }"
      IFS= read -r answer
      printf 'answer: %s\n' "$answer"
      ;;
    sleep\ *)
      if [ -z "$interrupted" ]; then
        # In the background (where an interrupt does not reach it), so that `wait` returns at once on one.
        sleep "${line#sleep }" &
        sleeper=$!
        if wait "$sleeper" && [ -z "$interrupted" ]; then printf 'slept %s\n' "${line#sleep }"; else kill "$sleeper" 2>/dev/null; fi
      fi
      ;;
    flood\ *)
      for ((i = 0; i < ${line#flood }; i++)); do printf 'line %d of a flood of output\n' "$i"; done
      ;;
    exit\ *)
      exit "${line#exit }"
      ;;
    run\ *)
      bash -c "${line#run }" </dev/null 2>&1 | sed 's/^/run: /'
      ;;
    *)
      printf 'echo: %s\n' "$line"
      ;;
  esac
  if [ -n "$marker" ]; then printf '%s\n' "$marker"; fi
  interrupted=
done
