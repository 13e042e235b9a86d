"""The Python language host for the Pulumi engine, as a gRPC LanguageRuntime server.

Upstream ships this plugin as a Go binary in its own Go module, and the Go module proxy reachable
here refuses that module (every version). The engine only needs the gRPC contract, so this host
implements it over the stubs that the `pulumi` wheel already carries, and starts programs through
upstream's own `pulumi-language-python-exec`, copied beside it from the `sdk/v3` Go module.

The engine starts it as `pulumi-language-python [flags] ENGINE_ADDRESS`, reads the port from the
first line of stdout, and kills the process when it is done with it.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

EXEC_SCRIPT = Path(__file__).resolve().with_name("pulumi-language-python-exec")
# Exit code the exec script uses after it has already shown the user an actionable error.
EXIT_AFTER_USER_MESSAGE = 32

# Runs inside the program's interpreter, which may be another virtualenv than the host's.
_LIST_DISTRIBUTIONS = """
import importlib.metadata as md, json
out = []
for dist in md.distributions():
    plugin = None
    for f in dist.files or []:
        if f.name == "pulumi-plugin.json":
            plugin = json.loads(f.read_text())
    out.append({"name": dist.metadata["Name"], "version": dist.version, "plugin": plugin})
print(json.dumps(out))
"""


def program_python(info: language_pb2.ProgramInfo) -> str:
    """The interpreter for a program: its virtualenv's python when Pulumi.yaml names one."""
    options: dict[str, Any] = json_format.MessageToDict(info.options) if info.options else {}
    venv = options.get("virtualenv")
    if not venv:
        return os.environ.get("PULUMI_PYTHON_CMD", "python3")
    venv_path = Path(venv)
    if not venv_path.is_absolute():
        venv_path = Path(info.root_directory) / venv_path
    python = venv_path / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(
            f"the virtualenv {venv_path} named in Pulumi.yaml has no bin/python; "
            "create it with `make setup`"
        )
    return str(python)


def installed_distributions(python: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [python, "-c", _LIST_DISTRIBUTIONS], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"listing packages with {python} failed: {result.stderr.strip()}")
    distributions: list[dict[str, Any]] = json.loads(result.stdout)
    return distributions


class PythonLanguageRuntime(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine_address: str) -> None:
        self.engine_address = engine_address

    def Handshake(
        self, request: language_pb2.LanguageHandshakeRequest, context: grpc.ServicerContext
    ) -> language_pb2.LanguageHandshakeResponse:
        self.engine_address = request.engine_address or self.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(
        self, request: empty_pb2.Empty, context: grpc.ServicerContext
    ) -> plugin_pb2.PluginInfo:
        from pulumi import _version

        return plugin_pb2.PluginInfo(version=str(_version._VERSION))

    def GetRequiredPackages(
        self, request: language_pb2.GetRequiredPackagesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetRequiredPackagesResponse:
        packages = []
        for dist in installed_distributions(program_python(request.info)):
            plugin = dist["plugin"]
            if plugin and plugin.get("resource"):
                packages.append(
                    plugin_pb2.PackageDependency(
                        kind="resource",
                        name=plugin["name"],
                        version=plugin.get("version", ""),
                        server=plugin.get("server", ""),
                    )
                )
        return language_pb2.GetRequiredPackagesResponse(packages=packages)

    def GetProgramDependencies(
        self, request: language_pb2.GetProgramDependenciesRequest, context: grpc.ServicerContext
    ) -> language_pb2.GetProgramDependenciesResponse:
        return language_pb2.GetProgramDependenciesResponse(
            dependencies=[
                language_pb2.DependencyInfo(name=d["name"], version=d["version"])
                for d in installed_distributions(program_python(request.info))
            ]
        )

    def About(
        self, request: language_pb2.AboutRequest, context: grpc.ServicerContext
    ) -> language_pb2.AboutResponse:
        python = program_python(request.info)
        version = subprocess.run(
            [python, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        return language_pb2.AboutResponse(
            executable=python, version=version.removeprefix("Python ")
        )

    def InstallDependencies(
        self, request: language_pb2.InstallDependenciesRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.InstallDependenciesResponse]:
        # The project's `make setup` owns the virtualenv; here we only make sure it is complete.
        root = Path(request.info.root_directory or request.directory)
        python = program_python(request.info)
        requirements = root / "requirements.txt"
        if requirements.exists():
            done = subprocess.run(
                [python, "-m", "pip", "install", "-q", "-r", str(requirements)],
                capture_output=True,
                check=False,
            )
            yield language_pb2.InstallDependenciesResponse(stdout=done.stdout, stderr=done.stderr)
            if done.returncode != 0:
                context.abort(grpc.StatusCode.UNKNOWN, f"pip install -r {requirements} failed")

    def Run(
        self, request: language_pb2.RunRequest, context: grpc.ServicerContext
    ) -> language_pb2.RunResponse:
        try:
            python = program_python(request.info)
        except FileNotFoundError as err:
            return language_pb2.RunResponse(error=str(err))
        argv = [
            python,
            "-u",
            str(EXEC_SCRIPT),
            f"--monitor={request.monitor_address}",
            f"--engine={self.engine_address}",
            f"--project={request.project}",
            f"--stack={request.stack}",
            f"--pwd={request.pwd}",
            f"--dry_run={'true' if request.dryRun else 'false'}",
            f"--parallel={request.parallel}",
            f"--organization={request.organization}",
            f"--root_directory={request.info.root_directory}",
            request.info.entry_point or request.program or ".",
            *request.args,
        ]
        env = dict(os.environ)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        # The engine reads the program's output through ours.
        code = subprocess.run(argv, cwd=request.pwd or None, env=env, check=False).returncode
        if code == 0:
            return language_pb2.RunResponse()
        if code == EXIT_AFTER_USER_MESSAGE:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {code}")

    def RunPlugin(
        self, request: language_pb2.RunPluginRequest, context: grpc.ServicerContext
    ) -> Iterator[language_pb2.RunPluginResponse]:
        """A plugin written in Python, such as a policy pack (`--policy-pack DIR`): DIR run by
        its virtualenv's interpreter, in the request's environment, with its output streamed
        back as it comes (the engine reads the plugin's port from the first line)."""
        try:
            python = program_python(request.info)
        except FileNotFoundError as err:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        env = dict(os.environ)
        env.update(entry.partition("=")[::2] for entry in request.env if "=" in entry)
        plugin = subprocess.Popen(
            [python, "-u", request.info.program_directory or request.program, *request.args],
            cwd=request.pwd or None,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        context.add_callback(plugin.kill)  # the engine hung up: the plugin goes with it
        output: queue.Queue[tuple[str, bytes] | None] = queue.Queue()

        def pump(stream: Any, field: str) -> None:
            for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
                output.put((field, chunk))
            output.put(None)

        for stream, field in ((plugin.stdout, "stdout"), (plugin.stderr, "stderr")):
            threading.Thread(target=pump, args=(stream, field), daemon=True).start()
        open_streams = 2
        while open_streams:
            item = output.get()
            if item is None:
                open_streams -= 1
            elif item[0] == "stdout":
                yield language_pb2.RunPluginResponse(stdout=item[1])
            else:
                yield language_pb2.RunPluginResponse(stderr=item[1])
        yield language_pb2.RunPluginResponse(exitcode=plugin.wait())

    def Cancel(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> empty_pb2.Empty:
        return empty_pb2.Empty()


def engine_alive(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except (OSError, ValueError):
        return False


def watch_engine(address: str, server: grpc.Server, interval: float = 5, misses: int = 3) -> None:
    """Stops the host once the engine stops answering: an engine killed with SIGKILL cannot
    interrupt its plugins, and an orphaned host would otherwise run forever."""
    missed = 0
    while missed < misses:
        time.sleep(interval)
        missed = 0 if engine_alive(address) else missed + 1
    server.stop(grace=None)


def main(argv: list[str]) -> int:
    positional = [a for a in argv if not a.startswith("-")]
    if not positional:
        print("usage: pulumi-language-python [flags] ENGINE_ADDRESS", file=sys.stderr)
        return 2
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        options=[("grpc.max_receive_message_length", 400 * 1024 * 1024)],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(
        PythonLanguageRuntime(positional[-1]), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    # The engine interrupts its plugins when it is done with them; that is a normal stop.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: server.stop(grace=None))
    print(port, flush=True)
    threading.Thread(target=watch_engine, args=(positional[-1], server), daemon=True).start()
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
