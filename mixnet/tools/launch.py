"""Starts a data-parallel job: a thin wrapper over MPI's `mpiexec` for users of MXNet's tools/launch.py.

    python -m mixnet.tools.launch -n 4 -- python train.py --epochs 3
    python -m mixnet.tools.launch -n 8 -H hosts.txt --env OMP_NUM_THREADS=4 -- python train.py
    python -m mixnet.tools.launch -n 2 --dry-run -- python train.py       # prints the mpiexec command

It runs (execs) `mpiexec -disable-auto-cleanup -n N [-f HOSTFILE] [-genv K V ...] COMMAND`, using the mpiexec next
to this Python (the mpich wheel of `pip install "mixnet[dist]"`), else the one on PATH. `-disable-auto-cleanup`
keeps the other ranks alive when one dies, so that each reports the dead peer (its next collective times out after
MIXNET_DIST_TIMEOUT seconds with an error naming the rank) and then ends the job (MPI_Abort): no process is left
behind. The environment of this shell reaches every rank (mpiexec forwards it); --env adds to it.

From MXNet's launch.py: -n/--num-workers, -H/--hostfile, --launcher local|mpi, --env NAME (pass this shell's
value), --env NAME:VALUE or NAME=VALUE, --env-worker NAME:VALUE. There are no parameter servers with MPI (the
workers reduce gradients among themselves), so -s/--num-servers > 0, --env-server and the ssh/sge/yarn launchers are
refused with an explanation. The hostfile is MPICH's format: one host per line, optionally `host:slots`.
"""
import argparse
import os
import shlex
import shutil
import sys

__all__ = ["build_command", "main", "mpiexec_path"]

_NO_SERVERS = ("mixnet's distributed training runs over MPI: there are no parameter servers; the N workers reduce "
               "the gradients among themselves (dist_sync KVStore or mixnet.horovod). Launch only the workers: "
               "-n N")


class LaunchError(Exception):
    """A command line this launcher cannot honour (printed as the error, exit status 2)."""


def mpiexec_path():
    """The mpiexec next to this Python (the mpich wheel installs it there), else the one on PATH, else None."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    return shutil.which("mpiexec")


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m mixnet.tools.launch",
        description="Launch a data-parallel mixnet job with mpiexec (MPI). Put the command after --.")
    p.add_argument("-n", "--num-workers", type=int, required=True, help="number of processes (workers)")
    p.add_argument("-s", "--num-servers", type=int, default=None,
                   help="refused unless 0: MPI jobs have no parameter servers")
    p.add_argument("-H", "--hostfile", help="MPICH hostfile: one host per line, optionally host:slots")
    p.add_argument("--launcher", default="mpi", choices=["mpi", "local", "ssh", "sge", "yarn"],
                   help="mpi (default) or local (the same on one machine); ssh, sge and yarn are refused")
    p.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                   help="set NAME=VALUE (or NAME:VALUE) on every rank; a bare NAME passes this shell's value")
    p.add_argument("--env-worker", action="append", default=[], metavar="NAME:VALUE", help="as --env")
    p.add_argument("--env-server", action="append", default=[], help="refused: there are no servers")
    p.add_argument("--sync-dst-dir", help="refused: copy your code to every host yourself (same path everywhere)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to run (default: next to this Python, else PATH)")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command instead of running it")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments (after --)")
    return p


def _env_pair(spec):
    """NAME=VALUE, NAME:VALUE (MXNet's form) or NAME (this shell's value) -> (NAME, VALUE)."""
    for sep in ("=", ":"):
        if sep in spec:
            name, value = spec.split(sep, 1)
            break
    else:
        name, value = spec, os.environ.get(spec)
        if value is None:
            raise LaunchError(f"--env {spec}: {spec} is not set in this shell (give NAME=VALUE)")
    if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name):
        raise LaunchError(f"--env {spec!r}: {name!r} is not an environment variable name")
    return name, value


def build_command(argv):
    """The mpiexec argv for launch's command line `argv` (LaunchError when it cannot be honoured)."""
    return _plan(argv)[0]


def _plan(argv):
    """(mpiexec argv, whether --dry-run was given)."""
    args = _parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise LaunchError("no command to launch: put it after --, e.g. -n 2 -- python train.py")
    if args.num_workers < 1:
        raise LaunchError(f"-n {args.num_workers}: the number of workers must be at least 1")
    if args.num_servers:
        raise LaunchError(f"-s {args.num_servers}: {_NO_SERVERS}")
    if args.env_server:
        raise LaunchError(f"--env-server: {_NO_SERVERS}")
    if args.launcher in ("ssh", "sge", "yarn"):
        raise LaunchError(f"--launcher {args.launcher}: mixnet launches through MPI's mpiexec, which starts the "
                          "processes on remote hosts itself (over ssh by default): use --launcher mpi with "
                          "-H HOSTFILE (see docs/distributed.md)")
    if args.sync_dst_dir:
        raise LaunchError("--sync-dst-dir: not supported; every host needs the program and the same Python "
                          "environment at the same path (see docs/distributed.md)")
    if args.hostfile and not os.path.isfile(args.hostfile):
        raise LaunchError(f"-H {args.hostfile}: no such file")
    mpiexec = args.mpiexec or mpiexec_path()
    if mpiexec is None:
        raise LaunchError("mpiexec not found: pip install \"mixnet[dist]\" installs mpi4py and the mpich wheel "
                          "(with its mpiexec)")
    cmd = [mpiexec, "-disable-auto-cleanup", "-n", str(args.num_workers)]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    for spec in args.env + args.env_worker:
        name, value = _env_pair(spec)
        cmd += ["-genv", name, value]
    return cmd + command, args.dry_run


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        cmd, dry_run = _plan(argv)
    except LaunchError as err:
        print(f"mixnet.tools.launch: error: {err}", file=sys.stderr)
        return 2
    if dry_run:
        print(shlex.join(cmd))
        return 0
    sys.stdout.flush()
    os.execv(cmd[0], cmd)       # mpiexec takes this process's place: signals (Ctrl-C) reach it directly


if __name__ == "__main__":
    sys.exit(main())
