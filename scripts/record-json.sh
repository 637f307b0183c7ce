# Sourced by the scripts that make records: each run's report kept as JSON beside the log, one
# line a run in NAME.jsonl beside NAME.log, which the figures catalog's `json` selectors read.
#
#   source scripts/record-json.sh
#   mapfile -t more < <(json_flags ARGS...)
#                                # --json-to FILE (a line each) where the run prints a report (not
#                                # --tune, --compile-only, --help, --format), else nothing: run
#                                # "$bin/$step" ARGS... "${more[@]}"
#   json_line JSONL COMMAND EXIT [WALL_SECONDS [ERROR]]
#                                # appends {"command", "exit", "wall_s", "report", "error"} to
#                                # JSONL: the report the run wrote (null where it wrote none, and
#                                # then ERROR, its error line, says why), then removes it
#   jsonl=$(json_beside_stdout)  # NAME.jsonl where standard output is the file NAME.log
#                                # (script > NAME.log), else /dev/null
#
# The command is written as the log shows it (without --json-to), so a line is found by it; a
# script whose log heads each run with a title instead writes the program and its arguments.

# Where a run writes its report: a name alone, the file made by the run and removed once read.
json_report="${TMPDIR:-/tmp}/record-json-$$.json"

json_flags() {
    local a
    for a in "$@"; do
        case $a in --tune | --compile-only | --help | -h | --format) return ;; esac
    done
    rm -f "$json_report"
    printf -- '--json-to\n%s\n' "$json_report"
}

# A JSON string: backslashes and quotes escaped (commands hold no control characters).
json_string() {
    local s=${1//\\/\\\\}
    printf '"%s"' "${s//\"/\\\"}"
}

json_line() {
    local jsonl=$1 command=$2 exit=$3 wall=${4:-null} error=null report=null
    [ -n "${5:-}" ] && error=$(json_string "$5")
    [ -s "$json_report" ] && report=$(cat "$json_report")
    rm -f "$json_report"
    printf '{"command":%s,"exit":%s,"wall_s":%s,"report":%s,"error":%s}\n' \
        "$(json_string "$command")" "$exit" "$wall" "$report" "$error" >> "$jsonl"
}

json_beside_stdout() {
    local out
    out=$(readlink -f /proc/$$/fd/1 2>/dev/null)
    case $out in
        *.log) : > "${out%.log}.jsonl" && echo "${out%.log}.jsonl" ;;
        *) echo /dev/null ;;
    esac
}
