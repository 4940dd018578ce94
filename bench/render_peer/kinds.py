"""What kind of process a pid of one side is, from its command line: the rows of the
benchmark's memory breakdown."""

from bench.lib.proc_stats import cmdline

# The rows, in the order they are printed.
KINDS = (
    "python",
    "node",
    "chromium browser",
    "renderer",
    "webui renderer",
    "gpu",
    "network utility",
    "storage utility",
    "other utility",
    "zygote",
    "other",
)


def process_kind(command: str) -> str:
    """The kind (one of `KINDS`) of the process run by `command` (its arguments joined by
    spaces, as `cmdline` gives them)."""
    if not command:
        return "other"
    program = command.split(" ", 1)[0]
    if "crashpad" in program:
        return "other"
    if "chromium" in program or "chrome" in program:
        return _chromium_kind(command)
    if program.endswith("node") or "/node " in f"{program} ":
        return "node"  # Crawlee's crawler (ours has none since it drives Chromium itself)
    if "python" in program:
        return "python"
    return "other"


def _chromium_kind(command: str) -> str:
    if "--type=" not in command:
        return "chromium browser"
    if "--type=renderer" in command:
        # The new headless mode's top-chrome WebUI, a renderer no page asked for.
        return "webui renderer" if "--top-chrome-webui" in command else "renderer"
    if "--type=zygote" in command:
        return "zygote"
    if "--type=gpu-process" in command:
        return "gpu"
    if "--type=utility" in command:
        if "NetworkService" in command:
            return "network utility"
        if "StorageService" in command:
            return "storage utility"
        return "other utility"
    return "other"


def kind_of(pid: int) -> str:
    """The kind of process `pid` (see `process_kind`)."""
    return process_kind(cmdline(pid))
