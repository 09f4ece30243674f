"""``python -m dpplan ARGS``: the ``dpplan`` binary this package installed."""

import os
import sys
import sysconfig


def find_dpplan_bin() -> str:
    """The ``dpplan`` binary installed with this package (in the scripts
    directory of its environment, where pip put it)."""
    exe = "dpplan" + (sysconfig.get_config_var("EXE") or "")
    candidates = [os.path.join(sysconfig.get_path("scripts"), exe)]
    user = sysconfig.get_path("scripts", f"{os.name}_user")
    if user:
        candidates.append(os.path.join(user, exe))
    candidates.append(os.path.join(os.path.dirname(sys.executable), exe))
    for c in candidates:
        if os.path.isfile(c):
            return c
    raise FileNotFoundError(
        f"the dpplan binary is not installed beside this Python (looked in {', '.join(candidates)}): reinstall the wheel"
    )


def main() -> None:
    binary = find_dpplan_bin()
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
