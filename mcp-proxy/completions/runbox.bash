# bash completion for runbox (installed by cmake --install into
# share/bash-completion/completions/runbox). Tool names come from `runbox tools --names`, which
# needs no daemon.
_runbox() {
    local cur prev sub
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    sub=${COMP_WORDS[1]}
    local subs="status call tools logs ps kill start stop restart setup"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$subs --list-tools --no-autostart --version --help" -- "$cur"))
        return
    fi
    case $sub in
    call)
        if [ "$COMP_CWORD" -eq 2 ] || { [ "$COMP_CWORD" -eq 3 ] && [[ ${COMP_WORDS[2]} == -* ]]; }; then
            COMPREPLY=($(compgen -W "--json --quiet $(runbox tools --names 2>/dev/null)" -- "$cur"))
        fi
        ;;
    tools) COMPREPLY=($(compgen -W "--json all sandbox studio readonly workspace exec console external" -- "$cur")) ;;
    logs)
        case $prev in
        --level) COMPREPLY=($(compgen -W "debug log info warn error" -- "$cur")) ;;
        --source) COMPREPLY=($(compgen -W "exec studio daemon" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "-f --follow --level --source --since -n --json" -- "$cur")) ;;
        esac
        ;;
    status | ps) COMPREPLY=($(compgen -W "--json" -- "$cur")) ;;
    kill) COMPREPLY=($(compgen -W "--signal TERM KILL INT HUP" -- "$cur")) ;;
    setup)
        case $prev in
        --config) COMPREPLY=($(compgen -f -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "claude-desktop claude-code cursor vscode windsurf zed continue opencode codex gemini-cli --dry-run --config --name --env --list" -- "$cur")) ;;
        esac
        ;;
    start | restart) COMPREPLY=($(compgen -W "--" -- "$cur")) ;;
    esac
}
complete -F _runbox runbox
