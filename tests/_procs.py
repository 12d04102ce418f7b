"""Child processes of the tests ended on every path: a failed assertion, a timeout (pytest-timeout's
signal raises in the test), a rank hung in a collective whose peer died."""
import subprocess


def stop_process(proc, grace_s: float = 15) -> None:
    """SIGTERM, then SIGKILL after grace_s, and reaped; nothing to do for one already ended."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def communicate_all(procs, timeout: float) -> list:
    """Each process's output (communicate); any still running when this returns or raises is killed."""
    try:
        return [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
