"""The one way a provider runs a command on a host: an argv list (never a shell string), a
bounded wait, and a result that keeps the command's own words.

Two transports, as the runbooks reach the cluster: `LocalTransport` runs the command on this
host, `KubectlExecTransport` runs it inside a pod (`kubectl -n NS exec TARGET -- ...`). The Slurm
provider runs sacctmgr and scontrol through them; the Weka directory provider runs mkdir, chown
and stat on a host or pod that mounts the Weka filesystems.

A command whose output has no size bound (a directory's archive) is `stream`ed instead: its
stdout is read in chunks as it comes, never held whole, and what bounds the wait is a stall (no
byte for `stall` seconds), not the whole run, which for a large tree takes hours. A command whose
input has no size bound (an archive unpacked back) is `feed`: its stdin is written a chunk at a
time as the chunks come, and a command that takes no byte for `stall` seconds fails the same way.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import IO, Protocol

from providers import environment
from providers.call_log import record

__all__ = [
    "CommandResult",
    "CommandStream",
    "KubectlExecTransport",
    "LocalTransport",
    "StreamError",
    "StreamingTransport",
    "Transport",
    "TransportSettings",
    "kubectl",
]

# What one read of a streamed command's stdout takes at most; the pipe's own buffer is 64 KiB.
CHUNK = 1 << 20
# How much of a streamed command's stderr is kept: its last words are the ones that say why.
STDERR_TAIL = 64 << 10
# A streamed command's default stall: no byte for this long fails it.
DEFAULT_STALL = 120.0


@dataclass(frozen=True)
class CommandResult:
    """What a command did. `returncode` is None when it never finished: it timed out or could not
    be started; `stderr` then says which."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def words(self) -> str:
        """The command's own words, as the error a person reads: stderr first, then stdout."""
        said = "\n".join(part.strip() for part in (self.stderr, self.stdout) if part.strip())
        return said or f"exit status {self.returncode}, no output"


class Transport(Protocol):
    def command(self, argv: Sequence[str]) -> list[str]:
        """The argv actually run for the command `argv`."""

    def run(self, argv: Sequence[str]) -> CommandResult:
        """Runs the command and returns its result; never raises for the command's failure."""


class StreamingTransport(Transport, Protocol):
    def stream(self, argv: Sequence[str]) -> AbstractContextManager[CommandStream]:
        """Starts the command; its stdout is read by iterating the stream. Leaving the context
        stops the command if it still runs."""

    def feed(self, argv: Sequence[str], chunks: Iterable[bytes]) -> CommandResult:
        """Runs the command with `chunks` as its stdin, written as they come; never raises for
        the command's failure (an error of `chunks` itself goes through, the command stopped).
        The command may stop reading early: what it left unread stays in `chunks`."""


class StreamError(Exception):
    """A streamed command failed, stalled or could not start; `result` says which, in its own
    words (its stdout is the data, so `result.stdout` is empty)."""

    def __init__(self, result: CommandResult) -> None:
        super().__init__(result.words)
        self.result = result


class _Tail(threading.Thread):
    """Reads a pipe to its end in the background (a command blocks when a pipe it writes is
    full), keeping its last STDERR_TAIL bytes."""

    def __init__(self, pipe: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.kept = bytearray()

    def run(self) -> None:
        while chunk := os.read(self.pipe.fileno(), CHUNK):
            self.kept += chunk
            del self.kept[:-STDERR_TAIL]

    @property
    def text(self) -> str:
        return self.kept.decode(errors="replace")


class CommandStream:
    """The stdout of a running command as chunks of bytes. Iterating it to the end raises
    StreamError unless the command exited 0; `stderr` is what it said there."""

    def __init__(self, argv: Sequence[str], process: subprocess.Popen[bytes], stall: float) -> None:
        self.argv = tuple(argv)
        self.process = process
        self.stall = stall
        assert process.stderr is not None
        self._stderr = _Tail(process.stderr)
        self._stderr.start()

    @property
    def stderr(self) -> str:
        return self._stderr.text

    def __iter__(self) -> Iterator[bytes]:
        stdout = self.process.stdout
        assert stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                if not selector.select(self.stall):
                    self.stop()
                    self._fail(None, f"{self.argv[0]} sent no byte for {self.stall:g} s")
                chunk = os.read(stdout.fileno(), CHUNK)
                if not chunk:
                    break
                yield chunk
        try:
            returncode = self.process.wait(self.stall)
        except subprocess.TimeoutExpired:
            self.stop()
            self._fail(None, f"{self.argv[0]} did not exit within {self.stall:g} s of its end")
        self._stderr.join()
        if returncode != 0:
            self._fail(returncode, "")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._stderr.join()

    def _fail(self, returncode: int | None, why: str) -> None:
        said = f"{self.stderr.strip()}\n{why}".strip()
        raise StreamError(CommandResult(self.argv, returncode, "", said))


@contextmanager
def _streamed(
    backend: str,
    argv: Sequence[str],
    full: list[str],
    env: dict[str, str] | None,
    stall: float,
) -> Iterator[CommandStream]:
    started = time.perf_counter()
    try:
        process = subprocess.Popen(
            full,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except OSError as error:
        said = f"could not run {full[0]}: {error}"
        raise StreamError(CommandResult(tuple(argv), None, "", said)) from None
    stream = CommandStream(argv, process, stall)
    try:
        yield stream
    finally:
        stream.stop()
        _record(backend, argv, started)


def _fed(
    backend: str,
    argv: Sequence[str],
    full: list[str],
    env: dict[str, str] | None,
    stall: float,
    chunks: Iterable[bytes],
) -> CommandResult:
    started = time.perf_counter()
    try:
        process = subprocess.Popen(
            full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
    except OSError as error:
        _record(backend, argv, started)
        return CommandResult(tuple(argv), None, "", f"could not run {full[0]}: {error}")
    assert process.stdin
    assert process.stdout
    assert process.stderr
    said = [_Tail(process.stdout), _Tail(process.stderr)]
    for tail in said:
        tail.start()
    returncode: int | None = None
    try:
        why = _write(process.stdin, chunks, stall, full[0])
        if not why:
            try:
                returncode = process.wait(stall)
            except subprocess.TimeoutExpired:
                why = f"{full[0]} did not exit within {stall:g} s of the end of its input"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for tail in said:
            tail.join()
        _record(backend, argv, started)
    stdout, stderr = (tail.text for tail in said)
    return CommandResult(tuple(argv), returncode, stdout, f"{stderr.strip()}\n{why}".strip())


def _write(stdin: IO[bytes], chunks: Iterable[bytes], stall: float, name: str) -> str:
    """Writes `chunks` to a command's stdin and closes it; why it stalled, or "" (it took all, or
    exited before: its status says how that went)."""
    fd = stdin.fileno()
    os.set_blocking(fd, False)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_WRITE)
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    if not selector.select(stall):
                        return f"{name} took no byte for {stall:g} s"
                    view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass
    finally:
        with suppress(BrokenPipeError):
            stdin.close()
    return ""


def _execute(
    backend: str,
    argv: Sequence[str],
    full: list[str],
    env: dict[str, str] | None,
    timeout: float,
) -> CommandResult:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            full,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        return CommandResult(
            tuple(argv),
            None,
            _text(expired.stdout),
            f"{_text(expired.stderr)}\n{full[0]} gave no answer within {timeout:g} s".strip(),
        )
    except OSError as error:
        return CommandResult(tuple(argv), None, "", f"could not run {full[0]}: {error}")
    finally:
        _record(backend, argv, started)
    return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


def _record(backend: str, argv: Sequence[str], started: float) -> None:
    """The command's time in the benchmark's call log, named by its first words."""
    call = " ".join(a for a in argv[:3] if not a.startswith("-"))
    record(backend, call, time.perf_counter() - started)


def _text(output: str | bytes | None) -> str:
    # TimeoutExpired keeps what was read so far as bytes even when the run asked for text.
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


@dataclass(frozen=True, kw_only=True)
class LocalTransport:
    """Runs commands on this host, with `env` added to this process's environment. `backend`
    names the calls in the benchmark's call log."""

    backend: str
    timeout: float
    env: Mapping[str, str] = field(default_factory=dict)
    stall: float = DEFAULT_STALL

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, argv: Sequence[str]) -> CommandResult:
        return _execute(
            self.backend, argv, self.command(argv), {**os.environ, **self.env}, self.timeout
        )

    def stream(self, argv: Sequence[str]) -> AbstractContextManager[CommandStream]:
        env = {**os.environ, **self.env}
        return _streamed(self.backend, argv, self.command(argv), env, self.stall)

    def feed(self, argv: Sequence[str], chunks: Iterable[bytes]) -> CommandResult:
        env = {**os.environ, **self.env}
        return _fed(self.backend, argv, self.command(argv), env, self.stall, chunks)


def kubectl(*args: str, namespace: str | None = None) -> list[str]:
    """The argv of `kubectl <args>`, in `namespace` when one is given: the one place kubectl's
    command line is built (`providers.kubectl` runs kubectl's own commands with it)."""
    return ["kubectl", *(("-n", namespace) if namespace else ()), *args]


@dataclass(frozen=True, kw_only=True)
class KubectlExecTransport:
    """Runs commands in a pod, as the runbooks do. kubectl finds its cluster as usual
    (KUBECONFIG); the pod's own configuration applies there."""

    backend: str
    timeout: float
    namespace: str
    target: str
    stall: float = DEFAULT_STALL

    def command(self, argv: Sequence[str]) -> list[str]:
        return kubectl("exec", self.target, "--", *argv, namespace=self.namespace)

    def fed_command(self, argv: Sequence[str]) -> list[str]:
        """The argv run for the command `argv` with its stdin passed on (`exec -i`)."""
        return kubectl("exec", "-i", self.target, "--", *argv, namespace=self.namespace)

    def run(self, argv: Sequence[str]) -> CommandResult:
        return _execute(self.backend, argv, self.command(argv), None, self.timeout)

    def stream(self, argv: Sequence[str]) -> AbstractContextManager[CommandStream]:
        # kubectl exec carries the pod's stdout as bytes: an archive needs no text encoding.
        return _streamed(self.backend, argv, self.command(argv), None, self.stall)

    def feed(self, argv: Sequence[str], chunks: Iterable[bytes]) -> CommandResult:
        return _fed(self.backend, argv, self.fed_command(argv), None, self.stall, chunks)


@dataclass(frozen=True, kw_only=True)
class TransportSettings:
    """How to reach a host that runs a provider's commands, read from `<PREFIX>_TRANSPORT`
    (`local` or `kubectl`), `<PREFIX>_TIMEOUT` (seconds), `<PREFIX>_STALL_TIMEOUT` (seconds
    without a byte that fail a streamed command), `<PREFIX>_KUBECTL_NAMESPACE` and
    `<PREFIX>_KUBECTL_TARGET`."""

    kind: str
    timeout: float
    namespace: str
    target: str
    stall: float = DEFAULT_STALL

    @classmethod
    def from_environment(
        cls, env: Mapping[str, str], prefix: str, *, namespace: str, target: str
    ) -> TransportSettings:
        """The settings, or ValueError naming the variable that is wrong and how to fix it."""
        kind = env.get(f"{prefix}_TRANSPORT") or "local"
        if kind not in ("local", "kubectl"):
            raise ValueError(f"{prefix}_TRANSPORT={kind!r}: set it to 'local' or 'kubectl'")
        return cls(
            kind=kind,
            timeout=environment.seconds(env, f"{prefix}_TIMEOUT", "20"),
            stall=environment.seconds(env, f"{prefix}_STALL_TIMEOUT", f"{DEFAULT_STALL:g}"),
            namespace=env.get(f"{prefix}_KUBECTL_NAMESPACE") or namespace,
            target=env.get(f"{prefix}_KUBECTL_TARGET") or target,
        )

    def make(self, backend: str, local_env: Mapping[str, str] | None = None) -> StreamingTransport:
        """The transport; `local_env` is added to the environment of local commands."""
        if self.kind == "kubectl":
            return KubectlExecTransport(
                backend=backend,
                timeout=self.timeout,
                namespace=self.namespace,
                target=self.target,
                stall=self.stall,
            )
        return LocalTransport(
            backend=backend, timeout=self.timeout, env=dict(local_env or {}), stall=self.stall
        )
