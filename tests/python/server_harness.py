"""Starts `saker serve` on a free loopback port for the test_server_*.py files and stops it afterwards."""
import os
import pathlib
import socket
import subprocess
import threading
import time

import requests

from conftest import saker_bin


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def synth_tiny_model(folder: pathlib.Path) -> pathlib.Path:
    """A tiny random-weight Qwen3 GGUF with a byte-level tokenizer (noise text; fine for protocol tests)."""
    path = folder / "tiny-q8_0.gguf"
    if not path.exists():
        subprocess.run([str(saker_bin()), "synth", "--arch", "qwen3", "--preset", "tiny", "--type", "q8_0",
                        "-o", str(path)], check=True, capture_output=True, timeout=300)
    return path


class Server:
    def __init__(self, model: pathlib.Path, *extra: str, name: str = "tiny", log_dir: pathlib.Path | None = None):
        """log_dir: where the server's log goes (default: beside the model; pass a temporary folder for a model
        that lives in the source tree)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open((log_dir or model.parent) / f"server-{self.port}.log", "w+b")
        self.proc = subprocess.Popen(
            [str(saker_bin()), "serve", "-m", str(model), "--port", str(self.port), "--model-name", name, *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.health_codes = []
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"saker serve exited {self.proc.returncode}:\n{self.output()}")
            try:
                r = requests.get(self.url + "/health", timeout=2)
                self.health_codes.append((r.status_code, r.json()))
                if r.status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.02)
        raise AssertionError(f"saker serve did not become healthy:\n{self.output()}")

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def rss_kb(self) -> int:
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def metrics(self) -> dict:
        """Prometheus samples: 'name{labels}' -> value."""
        text = requests.get(self.url + "/metrics", timeout=10).text
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                out[key] = float(value)
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


_MODEL_DIR = None


def tiny_model_path(tmp_path_factory) -> pathlib.Path:
    """The synthesized tiny model, made once per test session."""
    global _MODEL_DIR
    if _MODEL_DIR is None:
        _MODEL_DIR = tmp_path_factory.mktemp("server-model")
    return synth_tiny_model(_MODEL_DIR)


class HeaderTrickler:
    """A client that sends a request line and then one more header byte every 0.1 s, never finishing its
    header: what a slow-loris attack does. Closes its socket on close()."""

    def __init__(self, port: int, head: bytes = b"GET /health HTTP/1.1\r\n"):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(head)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                self.sock.sendall(b"X")
                time.sleep(0.1)
        except OSError:
            pass  # the server closed it

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()
