"""The virtual Pi, booted: QEMU running the image of guest_image.py, driven from outside.

    python3 tests/vm/virtual_pi.py shell [trixie]    boot it and log in as `pi` (the
                                    guest ends with the shell: every change is thrown away)

The guest is reached three ways, as a Pi on a desk is: ssh as `pi` (a Pi OS first user,
sudo without a password), the unit's console on the guest's second serial port (a TCP
socket on the host's loopback: pyserial's `socket://`), and the test devices' own files
(gpio-sim's lines, the recorded I2C, SPI and PWM traffic) read and written over ssh.

Writes go to a throw-away layer over the cached image (a qcow2 file in the run folder,
removed with the machine). The guest's reboot ends QEMU (-no-reboot), as a Pi's ends
its SoC's run, and the harness starts it again on the same layer and ports: an emulated
PC's warm reset boots its kernel 3x slower than a new QEMU does (bookworm's: 175 s
against 53 s to ssh). QEMU's pid is in its run folder's qemu.pid (-pidfile), for whoever
must end it from outside; this module ends the process it started, by its pid.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guest_image import Image, build, release_named  # noqa: E402

# what ssh says when it never reached the guest's shell (nothing ran)
UNREACHED = re.compile(rb"kex_exchange_identification|banner exchange|Connection refused")
BOOT_S = 600  # generous: under software emulation a boot takes 30-70 s on two cores
QEMU = "qemu-system-x86_64"


def kvm_usable() -> bool:
    """Whether /dev/kvm runs a stock kernel: not these machines' nested PVM, where QEMU
    aborts or hangs (CITYUNIT_VM_KVM=1 forces it on, =0 off)."""
    forced = os.environ.get("CITYUNIT_VM_KVM")
    if forced is not None:
        return forced == "1"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    return not Path("/sys/module/kvm_pvm").exists()


def free_ports(n: int) -> list[int]:
    """`n` distinct ports free on the loopback now (held together while chosen)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]


@dataclass
class Line:
    """One GPIO line of the guest's header (gpio-sim): its level is set from outside as a
    pull, which is what a button to GND or a switch does to an input with a pull-up."""

    pi: VirtualPi
    offset: int

    @property
    def path(self) -> str:
        return f"{self.pi.gpio_sim}/sim_gpio{self.offset}"

    def drive(self, high: bool) -> None:
        """A switch's position: kept across reboots, as a real switch keeps it."""
        self.pi.sudo(f"vpi-line {self.offset} {'high' if high else 'low'}")

    def tap(self, ms: int = 150) -> None:
        """A button's short press: held to GND for `ms`, in one command in the guest (two
        ssh round trips could add up to a long press). The sleep is the press's length."""
        self.pi.sudo(
            f"echo pull-down > {self.path}/pull && sleep {ms / 1000} && echo pull-up > {self.path}/pull"
        )

    def hold(self, *others: Line, ms: int) -> None:
        """This line and `others` held to GND together for `ms`, then released: in the
        guest's background, so the hold goes on whatever becomes of this ssh session (a
        hold that powers the guest off ends it)."""
        pulls = [f"{line.path}/pull" for line in (self, *others)]
        down = " && ".join(f"echo pull-down > {p}" for p in pulls)
        up = " ; ".join(f"echo pull-up > {p}" for p in pulls)
        hold = shlex.quote(f"{down} && sleep {ms / 1000} ; {up}")
        self.pi.sudo(f"setsid sh -c {hold} </dev/null >/dev/null 2>&1 &")


@dataclass(frozen=True)
class I2CWrite:
    t_ns: int
    addr: int
    data: bytes


@dataclass(frozen=True)
class SPIWrite:
    t_ns: int
    lines: int  # bit N: GPIO N high at the time
    speed_hz: int
    cs: int
    data: bytes


@dataclass(frozen=True)
class PWMState:
    t_ns: int
    channel: int
    period: int
    duty: int
    enabled: bool


class VirtualPi:
    """QEMU with the image, its ssh and serial ports on 127.0.0.1: a context manager that
    boots it (and waits for ssh) and ends it."""

    def __init__(self, image: Image, run_dir: Path | None = None) -> None:
        self.image = image
        self.dir = run_dir or Path(tempfile.mkdtemp(prefix="vpi-run-"))
        self.ssh_port, self.console_port, self.web_port = free_ports(3)
        self.process: subprocess.Popen[bytes] | None = None
        self.control = self.dir / "ssh.sock"  # the shared connection's socket
        self.layer = self.dir / "layer.qcow2"  # the guest's writes, over the cached image
        self.pidfile = self.dir / "qemu.pid"
        self.console_log = self.dir / "console.log"
        self._gpio_sim: str | None = None

    @property
    def console_url(self) -> str:
        """The unit's console (the guest's /dev/ttyS1), as a pyserial URL."""
        return f"socket://127.0.0.1:{self.console_port}"

    def command(self) -> list[str]:
        accel = ["-accel", "kvm", "-cpu", "host"] if kvm_usable() else [
            "-accel", "tcg,thread=multi", "-cpu", "max"]  # fmt: skip
        return [
            QEMU, *accel, "-M", "q35", "-smp", "2", "-m", "2048",
            "-display", "none", "-monitor", "none", "-no-user-config", "-nodefaults",
            "-kernel", str(self.image.kernel), "-initrd", str(self.image.initrd),
            "-append", "root=/dev/vda rw console=ttyS0,115200 net.ifnames=0 panic=0",
            "-drive", f"file={self.layer},format=qcow2,if=virtio", "-no-reboot",
            "-netdev", f"user,id=net,hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22"
                       f",hostfwd=tcp:127.0.0.1:{self.web_port}-:8080",  # the players' page
            "-device", "virtio-net-pci,netdev=net",
            "-device", "virtio-rng-pci",
            "-chardev", f"file,id=console,path={self.console_log},append=on",
            "-serial", "chardev:console",
            "-chardev", f"socket,id=uart,host=127.0.0.1,port={self.console_port},server=on,wait=off",
            "-serial", "chardev:uart",
            "-pidfile", str(self.pidfile),
        ]  # fmt: skip

    def __enter__(self) -> VirtualPi:
        try:
            self.boot()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def boot(self) -> None:
        """QEMU started, on the layer this machine has written so far (a new one first)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.layer.exists():
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                            str(self.image.disk), str(self.layer)], check=True)  # fmt: skip
        for attempt in (1, 2):
            start = self.console_log.stat().st_size if self.console_log.exists() else 0
            log = open(self.dir / "qemu.log", "ab")  # noqa: SIM115 (QEMU keeps it)
            self.process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
            log.close()
            try:
                self.wait_ssh()
                return
            except AssertionError:
                # Under TCG a kernel now and then stops early (once in a session's boots,
                # after "Switched to clocksource hpet"): before userspace it has written
                # nothing, so it is started again, once. Past that, a failure is real.
                if attempt == 2 or b"Run /" in self.console_log.read_bytes()[start:]:
                    raise
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """End QEMU, by the pid we started it with."""
        if self.process is None:
            return
        self.hang_up()
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.pidfile.unlink(missing_ok=True)
        self.layer.unlink(missing_ok=True)

    def wait_powered_off(self, timeout: float = 300) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    # ----- ssh ---------------------------------------------------------------------

    def hang_up(self) -> None:
        """End the shared connection's master (ours: ended through its socket), as before a
        reboot, so that the next command connects to the guest anew."""
        if self.control.exists():
            subprocess.run([*self.ssh_command("-O", "exit")], capture_output=True, timeout=30,
                           check=False)  # fmt: skip

    def ssh_command(self, *extra: str) -> list[str]:
        """ssh to `pi`, each command a channel of one shared connection (its master
        started by the first command, ended by stop()): an emulated guest spends seconds
        on each new connection's key exchange and login session."""
        return [
            "ssh", "-i", str(self.image.key), "-p", str(self.ssh_port),
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "ConnectTimeout=20",
            "-o", "ServerAliveInterval=10", "-o", "ControlMaster=auto",
            "-o", f"ControlPath={self.control}", "-o", "ControlPersist=600",
            *extra, "pi@127.0.0.1",
        ]  # fmt: skip

    def ssh(
        self, command: str, input: bytes | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[bytes]:
        """`command` in the guest, as `pi`: tried again while ssh did not reach the guest's
        shell at all (a loaded guest's sshd late with its banner: ssh's 255 before any
        command ran), never once the command may have run."""
        deadline = time.monotonic() + timeout
        while True:
            result = subprocess.run(
                [*self.ssh_command(), command], input=input, capture_output=True,
                timeout=max(1.0, deadline - time.monotonic()), check=False,
            )  # fmt: skip
            unreached = result.returncode == 255 and UNREACHED.search(result.stderr)
            if not unreached or time.monotonic() > deadline - 30:
                return result
            time.sleep(1)  # a retry's pace, not a wait for behaviour

    def run(
        self, command: str, check: bool = True, timeout: float = 300, input: bytes | None = None
    ) -> subprocess.CompletedProcess[str]:
        """A shell command in the guest, as `pi`."""
        done = self.ssh(command, input, timeout)
        result = subprocess.CompletedProcess(
            done.args, done.returncode, done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace"),
        )  # fmt: skip
        if check and result.returncode != 0:
            raise AssertionError(
                f"in the guest: {command!r} exited {result.returncode}\n"
                f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
            )
        return result

    def sudo(self, command: str, **kw: object) -> subprocess.CompletedProcess[str]:
        return self.run(f"sudo sh -c {shlex.quote(command)}", **kw)  # type: ignore[arg-type]

    def read_bytes(self, path: str) -> bytes:
        result = self.ssh(f"sudo cat {shlex.quote(path)}")
        assert result.returncode == 0, f"in the guest: cannot read {path}: {result.stderr!r}"
        return result.stdout

    def put(self, files: dict[str, tuple[bytes, int]], into: str) -> None:
        """Files (relative name -> content and mode) written under `into`, owned by pi."""
        import io
        import tarfile

        buffer, now = io.BytesIO(), time.time()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name, (data, mode) in files.items():
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), mode, now
                tar.addfile(info, io.BytesIO(data))
        result = self.ssh(f"mkdir -p {into} && tar -x -C {into}", buffer.getvalue())
        assert result.returncode == 0, f"in the guest: cannot write {into}: {result.stderr!r}"

    def wait_ssh(self, timeout: float = BOOT_S) -> None:
        """Until `pi` can log in: each try is a connection with its own timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.running():
                raise AssertionError(f"QEMU ended while booting: see {self.dir}")
            done = subprocess.run([*self.ssh_command(), "true"], capture_output=True,
                                  timeout=60, check=False)  # fmt: skip
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no ssh after {timeout:.0f} s: see {self.console_log}")
            time.sleep(1)  # a retry's pace, not a wait for behaviour: the next try waits

    def reboot(self) -> None:
        """`systemctl reboot` in the guest: systemd takes the OS down, QEMU ends at the
        reset (-no-reboot) and is started again, and the guest boots on what it wrote."""
        self.sudo("systemctl reboot", check=False)
        self.hang_up()
        try:
            code = self.wait_powered_off(BOOT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the guest did not go down: see {self.console_log}") from None
        assert code == 0, f"QEMU ended with {code} at the reboot: see {self.dir}"
        self._gpio_sim = None
        self.boot()

    # ----- the test devices --------------------------------------------------------

    @property
    def gpio_sim(self) -> str:
        """gpio-sim's sysfs folder for the header's chip."""
        if self._gpio_sim is None:
            text = self.run("cat /run/vpi/firmware.log").stdout
            match = re.search(r"^gpio-sim (\S+) (\S+)$", text, re.M)
            assert match, f"the firmware stand-in made no gpio-sim chip:\n{text}"
            self._gpio_sim = f"/sys/devices/platform/{match[1]}/{match[2]}"
        return self._gpio_sim

    def line(self, gpio: int) -> Line:
        return Line(self, gpio)

    def recorded(self, device: str) -> bytes:
        """A test device's record, whole: none of it may have been dropped at its cap."""
        raw = self.read_bytes(f"/sys/kernel/debug/{device}/log")
        dropped = self.read_bytes(f"/sys/kernel/debug/{device}/dropped").strip()
        assert dropped == b"0", f"{device} dropped {dropped.decode()} records at its cap"
        return raw

    def i2c_writes(self) -> list[I2CWrite]:
        raw, out, at = self.recorded("vpi-i2c-1"), [], 0
        while at < len(raw):
            t_ns, addr, _flags, n = struct.unpack_from("<QHHI", raw, at)
            at += 16
            out.append(I2CWrite(t_ns, addr, raw[at : at + n]))
            at += n
        return out

    def spi_writes(self) -> list[SPIWrite]:
        raw, out, at = self.recorded("vpi-spi-0"), [], 0
        while at < len(raw):
            t_ns, lines, speed, cs, n = struct.unpack_from("<QQIB3xI", raw, at)
            at += 28
            out.append(SPIWrite(t_ns, lines, speed, cs, raw[at : at + n]))
            at += n
        return out

    def pwm_states(self) -> list[PWMState]:
        text = self.recorded("vpi-pwm").decode()
        out = []
        for row in text.splitlines():
            t, ch, period, duty, _polarity, enabled = map(int, row.split())
            out.append(PWMState(t, ch, period, duty, bool(enabled)))
        return out

    def gpio_sets(self) -> list[tuple[int, int, int]]:
        """(t_ns, BCM line, level) of every output set, from the kernel's gpio_value
        trace events (the monotonic clock)."""
        chips = self.read_bytes("/sys/kernel/debug/gpio").decode()
        found = re.search(r"GPIOs (\d+)-\d+, parent: platform/gpio-sim", chips)
        assert found, chips
        base = int(found[1])
        text = self.read_bytes("/sys/kernel/tracing/trace").decode()
        out = []
        for match in re.finditer(r"(\d+\.\d+): gpio_value: (\d+) set (\d+)", text):
            t, gpio, value = match.groups()
            out.append((round(float(t) * 1e9), int(gpio) - base, int(value)))
        return out

    def journal(self, unit: str = "cityunit") -> str:
        """What `unit` logged since this boot."""
        return self.sudo(f"journalctl -q -b -o cat -u {unit} --no-pager").stdout


def main(argv: list[str]) -> int:
    try:
        if argv[:1] != ["shell"] or len(argv) > 2:
            raise KeyError("")
        release = release_named(argv[1] if argv[1:] else None)
    except KeyError as e:
        print(e.args[0] or __doc__, file=sys.stderr)
        return 2
    with VirtualPi(build(release)) as pi:
        print(
            f"virtual Pi up: ssh -p {pi.ssh_port} -i {pi.image.key} pi@127.0.0.1; "
            f"the unit's console: {pi.console_url}; logs in {pi.dir}",
            file=sys.stderr,
        )
        return subprocess.call(pi.ssh_command("-t"))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
