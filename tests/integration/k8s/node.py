"""A real single-node Kubernetes cluster on this machine: the control plane of
``controlplane.py`` plus kube-scheduler, a real kubelet on containerd with runc, a CNI bridge,
kube-proxy, CoreDNS and kube-router (NetworkPolicy), every pod a real container.

Why these parts: they are what ``hack/local-up-cluster.sh`` runs, as host processes, so
nothing needs an image registry. The binaries come from ``tools/envtest.sh`` (built
from the same pinned ``k8s.io/kubernetes`` module as the apiserver); containerd, runc and the
CNI plugins are Debian's. Every image a pod runs is imported into this node's containerd from
the local Docker engine (``docker save``), including the pod sandbox ("pause") image, which
is built here from a few lines of C (``PAUSE_SOURCE``): no registry is ever asked.

NetworkPolicy: the ``bridge`` CNI enforces none, so kube-router runs beside it with only its
firewall controller (``--run-router=false --run-service-proxy=false --enable-cni=false``),
turning the chart's policy into iptables rules and ipsets; traffic from the node itself (the
kubelet's probes, the host's clients) stays allowed, as NetworkPolicy specifies.

Isolation from the rest of the machine: containerd runs with its own root, state and socket
under ``workdir`` (it never touches the Docker engine's), pods sit on a bridge of their own
(``BRIDGE``, 10.244.0.0/24, created here and deleted by ``stop``), and the apiserver listens on
that bridge's address, which nothing outside this machine can reach. Pods reach the apiserver
through the ``kubernetes`` Service's cluster IP (kube-proxy) and resolve Services by name
through CoreDNS (a host process on the bridge's address, ``_start_dns``).

cgroup v1 (this machine's) is deprecated in the kubelet and refused by default since 1.35:
``failCgroupV1: false`` keeps it working; the cgroup driver is ``cgroupfs`` (no systemd here).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml
from controlplane import ROOT, ControlPlane, MissingPrerequisite, free_port, terminate

__all__ = [
    "BRIDGE",
    "BRIDGE_ADDRESS",
    "NODE_BINARIES",
    "PAUSE_IMAGE",
    "Node",
    "chart_images",
]

BRIDGE = "a01gym-node0"
BRIDGE_ADDRESS = "10.244.0.1"
POD_SUBNET = "10.244.0.0/24"
NODE_NAME = "a01gym-node"
PAUSE_IMAGE = "a01gym.local/pause:1"
NODE_BINARIES = ("kubelet", "kube-scheduler", "kube-proxy", "kube-router", "coredns")
HOST_BINARIES = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip", "ipset")
# kube-router's NetworkPolicy chains and ipsets: it leaves them when stopped and its own
# ``--cleanup-config`` (v2.1.0) removes none of them here, so ``stop`` does.
ROUTER_CHAINS = ("KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-")
ROUTER_SETS = ("KUBE-SRC-", "KUBE-DST-", "kube-router-")
CNI_DIR = Path("/usr/lib/cni")

PAUSE_SOURCE = r"""
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static void bye(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGINT, bye); signal(SIGTERM, bye); signal(SIGCHLD, reap);
  for (;;) pause();
}
"""


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def chart_images() -> dict[str, str]:
    """The chart's default image names, each mapped to the image ``tools/images.sh`` built
    here under its local name (same version: the chart's ``appVersion``)."""
    chart = yaml.safe_load((ROOT / "charts" / "a01gym" / "Chart.yaml").read_text())
    version = chart["appVersion"]
    return {
        f"ghcr.io/a01gym/{name}:{version}": f"a01gym/{name}:{version}"
        for name in ("a01gym", "sandbox")
    }


def _qualified(image: str) -> str:
    """The name containerd files a Docker image under (``docker.io/library/...``)."""
    first = image.split("/", 1)[0]
    if "/" not in image:
        return f"docker.io/library/{image}"
    if "." in first or ":" in first or first == "localhost":
        return image
    return f"docker.io/{image}"


@dataclasses.dataclass
class Node:
    """One node, ``NODE_NAME``, running real containers for ``plane``.

    ``plane`` must be made with ``host=BRIDGE_ADDRESS`` and ``controllers="*"`` and not yet
    started: ``start`` creates the bridge first, because the apiserver listens on it.
    """

    workdir: Path
    plane: ControlPlane
    images: dict[str, str] = dataclasses.field(default_factory=dict)
    """``{name on the node: Docker engine image}``, imported before the kubelet starts: the
    chart's default image names resolve to the images built here, so nothing is pulled."""
    processes: dict[str, subprocess.Popen[bytes]] = dataclasses.field(default_factory=dict)
    _netns_before: set[Path] = dataclasses.field(default_factory=set, init=False)

    @property
    def socket(self) -> Path:
        return self.workdir / "containerd" / "containerd.sock"

    def check(self) -> None:
        missing = [n for n in NODE_BINARIES if not (self.plane.bin_dir / n).exists()]
        missing += [n for n in HOST_BINARIES if shutil.which(n) is None]
        missing += [n for n in ("bridge", "host-local", "loopback") if not (CNI_DIR / n).exists()]
        if shutil.which("docker") is None or shutil.which("gcc") is None:
            missing.append("docker and gcc")
        if missing:
            raise MissingPrerequisite(
                f"a real node needs {', '.join(missing)}: run tools/envtest.sh, and apt-get "
                "install containerd runc containernetworking-plugins ipset gcc"
            )

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout_s: float = 120.0) -> Node:
        self.check()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._netns_before = set(Path("/run/netns").glob("cni-*"))
        try:
            self._bridge_up()
            self.plane.start()
            self._start_containerd()
            self._import_images()
            self._start_kubelet()
            self._start_scheduler()
            self._start_proxy()
            self._start_dns()
            self._wait_ready(timeout_s)
            self._start_policy()  # it looks the Node up at start: after the kubelet made it
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Delete every pod through the API and let the kubelet tear them down (so CNI and
        volumes are released the normal way), then stop the kubelet, remove whatever
        containers are left, and stop the rest."""
        self._terminate("kube-scheduler")  # pods a controller recreates now stay Pending
        if "kubelet" in self.processes and self.plane.processes:
            self._drain()
        self._terminate("kubelet")
        if "containerd" in self.processes:
            self._remove_pods()
        for name in ("kube-router", "kube-proxy", "coredns", "containerd"):
            self._terminate(name)
        self._kill_shims()
        self.plane.stop()
        self._unmount()
        self._flush_proxy_rules()
        self._flush_policy_rules()
        self._forward_rules(add=False)
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, check=False)

    def _drain(self, timeout_s: float = 30.0) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            for pod in self.plane.request("GET", "/api/v1/pods")["items"]:
                meta = pod["metadata"]
                self.plane.request(
                    "DELETE",
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
                    "?gracePeriodSeconds=0",
                )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.ctr("containers", "list", "-q", check=False).stdout.split():
                return
            time.sleep(0.5)

    def _terminate(self, name: str) -> None:
        terminate(self.processes.pop(name, None), 20)

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.workdir / f"{name}.log", "wb") as log:
            process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")

    # -- network -----------------------------------------------------------------------------
    def _bridge_up(self) -> None:
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, check=False)
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "addr", "add", f"{BRIDGE_ADDRESS}/24", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])
        # Bridged traffic through iptables, so a pod reaching a Service's cluster IP whose
        # endpoint is a pod on the same bridge is DNATed by kube-proxy's rules.
        nf = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
        if nf.exists():
            nf.write_text("1")
        cni = self.workdir / "cni"
        cni.mkdir(exist_ok=True)
        conf = {
            "cniVersion": "1.0.0",
            "name": "a01gym-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isDefaultGateway": True,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET, "gateway": BRIDGE_ADDRESS}]],
                        "dataDir": str(self.workdir / "ipam"),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }
        (cni / "10-a01gym.conflist").write_text(json.dumps(conf, indent=2))
        self._forward_rules(add=True)

    def _forward_rules(self, add: bool) -> None:
        """Accept forwarding between pods on the bridge: with bridged traffic going through
        iptables, a host whose FORWARD policy is DROP (the Docker engine sets it) would drop
        pod-to-pod packets. One chain of ours, jumped to from FORWARD, removed by ``stop``."""
        chain = "A01GYM-NODE"
        subprocess.run(["iptables", "-D", "FORWARD", "-j", chain], capture_output=True)
        subprocess.run(["iptables", "-F", chain], capture_output=True)
        subprocess.run(["iptables", "-X", chain], capture_output=True)
        if add:
            _run(["iptables", "-N", chain])
            _run(["iptables", "-A", chain, "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT"])
            _run(["iptables", "-A", "FORWARD", "-j", chain])

    @staticmethod
    def _flush_policy_rules() -> None:
        """Remove kube-router's chains (and the jumps to them) and its ipsets."""
        rules = _run(["iptables", "-S"]).stdout.splitlines()
        chains = [
            r.split()[1]
            for r in rules
            if r.startswith("-N ") and r.split()[1].startswith(ROUTER_CHAINS)
        ]
        for rule in rules:
            words = shlex.split(rule)
            jumps = "-j" in words and words[words.index("-j") + 1] in chains
            if words[0] == "-A" and words[1] in ("INPUT", "FORWARD", "OUTPUT") and jumps:
                subprocess.run(["iptables", "-D", *words[1:]], capture_output=True)
        for chain in chains:
            subprocess.run(["iptables", "-F", chain], capture_output=True)
        for chain in chains:
            subprocess.run(["iptables", "-X", chain], capture_output=True)
        sets = subprocess.run(["ipset", "list", "-n"], capture_output=True, text=True).stdout
        for name in sets.split():
            if name.startswith(ROUTER_SETS):
                subprocess.run(["ipset", "destroy", name], capture_output=True)

    def _flush_proxy_rules(self) -> None:
        """kube-proxy's chains outlive it; ``--cleanup`` removes them (and only them)."""
        proxy = self.plane.bin_dir / "kube-proxy"
        if proxy.exists():
            subprocess.run([str(proxy), "--cleanup"], capture_output=True, check=False)
        # The kubelet's own chain, which ``--cleanup`` leaves (IPv4 and IPv6).
        for tool in ("iptables", "ip6tables"):
            for args in (
                ("-D", "INPUT", "-j", "KUBE-FIREWALL"),
                ("-D", "OUTPUT", "-j", "KUBE-FIREWALL"),
                ("-F", "KUBE-FIREWALL"),
                ("-X", "KUBE-FIREWALL"),
            ):
                subprocess.run([tool, *args], capture_output=True, check=False)

    # -- containerd --------------------------------------------------------------------------
    def _start_containerd(self) -> None:
        root = self.workdir / "containerd"
        root.mkdir(exist_ok=True)
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        config = f"""version = 2
root = "{root / "root"}"
state = "{root / "state"}"
[grpc]
  address = "{self.socket}"
[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  enable_selinux = false
  disable_apparmor = true
  # This machine refuses a lower oom_score_adj than the caller's (no CAP_SYS_RESOURCE over
  # it); the kubelet asks -998 for pod sandboxes, so cap it at containerd's own.
  restrict_oom_score_adj = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_DIR}"
    conf_dir = "{self.workdir / "cni"}"
"""
        (root / "config.toml").write_text(config)
        process = self._spawn("containerd", ["containerd", "--config", str(root / "config.toml")])
        deadline = time.monotonic() + 30
        while self.ctr("version", check=False).returncode != 0:
            if process.poll() is not None:
                raise RuntimeError(f"containerd exited: {self.log('containerd')[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError("containerd did not answer in 30 s")
            time.sleep(0.2)

    def ctr(
        self, *args: str, check: bool = True, **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        argv = ["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args]
        if check:
            return _run(argv, **kwargs)
        return subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)

    def _import_images(self) -> None:
        self._build_pause()
        for name, image in {PAUSE_IMAGE: PAUSE_IMAGE, **self.images}.items():
            archive = self.workdir / "image.tar"
            _run(["docker", "save", "-o", str(archive), image])
            # ``--all-platforms``: a saved archive holds one platform, imported as is.
            self.ctr("images", "import", "--all-platforms", str(archive))
            archive.unlink()
            if name != image:
                self.ctr("images", "tag", "--force", _qualified(image), _qualified(name))

    def containers(self) -> list[str]:
        """Ids of the containers with a running task (pause containers included)."""
        lines = self.ctr("tasks", "list").stdout.splitlines()[1:]
        return [line.split()[0] for line in lines if line.split()[-1] == "RUNNING"]

    def _build_pause(self) -> None:
        if _run(["docker", "images", "-q", PAUSE_IMAGE]).stdout.strip():
            return
        build = self.workdir / "pause"
        build.mkdir(exist_ok=True)
        (build / "pause.c").write_text(PAUSE_SOURCE)
        _run(["gcc", "-Os", "-static", "-o", str(build / "pause"), str(build / "pause.c")])
        _run(["tar", "-C", str(build), "-cf", str(build / "rootfs.tar"), "pause"])
        _run(
            [
                "docker",
                "import",
                "--change",
                'ENTRYPOINT ["/pause"]',
                "--change",
                "USER 65535:65535",
                str(build / "rootfs.tar"),
                PAUSE_IMAGE,
            ]
        )

    def _remove_pods(self) -> None:
        """Every pod sandbox the kubelet left, with its containers (``crictl rmp -fa``'s work,
        through ctr: stop the tasks, delete the containers)."""
        listed = self.ctr("containers", "list", "-q", check=False).stdout.split()
        for container in listed:
            self.ctr("tasks", "kill", "--signal", "SIGKILL", container, check=False)
        deadline = time.monotonic() + 20
        for container in listed:
            while time.monotonic() < deadline:
                deleted = self.ctr("tasks", "delete", container, check=False)
                if deleted.returncode == 0 or "not found" in deleted.stderr:  # or had none
                    break
                time.sleep(0.2)
            self.ctr("containers", "delete", container, check=False)

    def _kill_shims(self) -> None:
        """A shim whose task was never deleted outlives containerd: find ours by the socket
        on its command line and stop them, by PID."""
        needle = str(self.socket).encode()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and needle in argv:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(proc.name), signal.SIGKILL)

    def _unmount(self) -> None:
        """The kubelet's volume mounts (tmpfs emptyDirs, projected tokens) and the pod netns
        mounts outlive its process: unmount everything under ``workdir``, deepest first."""
        mounts = [
            line.split()[1]
            for line in Path("/proc/self/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(self.workdir))
            or (
                line.split()[1].startswith("/run/netns/cni-")
                and Path(line.split()[1]) not in self._netns_before
            )
        ]
        for target in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)
        for netns in set(Path("/run/netns").glob("cni-*")) - self._netns_before:
            netns.unlink(missing_ok=True)

    # -- kubelet, scheduler, kube-proxy ------------------------------------------------------
    def _start_kubelet(self) -> None:
        kubelet_dir = self.workdir / "kubelet"
        kubelet_dir.mkdir(exist_ok=True)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": False},
                "x509": {"clientCAFile": str(self.plane.workdir / "pki" / "ca.crt")},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "address": BRIDGE_ADDRESS,
            "port": free_port(BRIDGE_ADDRESS),
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port(),
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "clusterDomain": "cluster.local",
            "clusterDNS": [BRIDGE_ADDRESS],
            "resolvConf": "/etc/resolv.conf",
            "podCIDR": POD_SUBNET,
            "podLogsDir": str(self.workdir / "logs"),
            "maxPods": 200,
            "serializeImagePulls": False,
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "100Mi"},
            "syncFrequency": "10s",
            "fileCheckFrequency": "10s",
            "nodeStatusUpdateFrequency": "5s",
            "volumeStatsAggPeriod": "0s",
            "protectKernelDefaults": False,
            "makeIPTablesUtilChains": False,
        }
        (kubelet_dir / "config.yaml").write_text(yaml.safe_dump(config))
        admin = self.plane.kubeconfig("admin")
        self._kubelet_argv = [
            str(self.plane.bin_dir / "kubelet"),
            f"--config={kubelet_dir / 'config.yaml'}",
            f"--kubeconfig={admin}",
            f"--root-dir={kubelet_dir / 'root'}",
            f"--cert-dir={kubelet_dir / 'pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={BRIDGE_ADDRESS}",
            "--v=1",
        ]
        self._spawn("kubelet", self._kubelet_argv)

    def restart_kubelet(self) -> None:
        """SIGTERM the kubelet and start it again, as a node agent upgrade would: its pods
        keep running in containerd meanwhile."""
        self._terminate("kubelet")
        self._spawn("kubelet", self._kubelet_argv)

    def _start_scheduler(self) -> None:
        admin = self.plane.kubeconfig("admin")
        self._spawn(
            "kube-scheduler",
            [
                str(self.plane.bin_dir / "kube-scheduler"),
                f"--kubeconfig={admin}",
                f"--authentication-kubeconfig={admin}",
                f"--authorization-kubeconfig={admin}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
            ],
        )

    def _start_proxy(self) -> None:
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.plane.kubeconfig("admin"))},
            "mode": "iptables",
            "clusterCIDR": "10.244.0.0/16",
            "hostnameOverride": NODE_NAME,
            "bindAddress": BRIDGE_ADDRESS,
            "healthzBindAddress": f"127.0.0.1:{free_port()}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            # This machine's conntrack sysctls are read-only: leave them as they are.
            "conntrack": {
                "maxPerCore": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
        }
        path = self.workdir / "kube-proxy.yaml"
        path.write_text(yaml.safe_dump(config))
        self._spawn("kube-proxy", [str(self.plane.bin_dir / "kube-proxy"), f"--config={path}"])

    def _start_dns(self) -> None:
        """Cluster DNS: CoreDNS's ``kubernetes`` plugin, as a host process on the bridge's
        address (the kubelet's ``clusterDNS``), so a pod resolves the chart's Services by name
        (``http://a01gym-gateway:8000``). Names outside ``cluster.local`` get NXDOMAIN: there is
        nowhere else to ask."""
        corefile = self.workdir / "Corefile"
        corefile.write_text(
            f"""cluster.local:53 in-addr.arpa:53 {{
    bind {BRIDGE_ADDRESS}
    errors
    kubernetes cluster.local in-addr.arpa {{
        kubeconfig {self.plane.kubeconfig("admin")}
        pods insecure
    }}
}}
.:53 {{
    bind {BRIDGE_ADDRESS}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""
        )
        self._spawn("coredns", [str(self.plane.bin_dir / "coredns"), "-conf", str(corefile)])

    def _start_policy(self) -> None:
        """kube-router's NetworkPolicy controller only (no routing, no service proxy, no CNI):
        the ``bridge`` CNI enforces no NetworkPolicy, and the chart's sandbox policy is the
        point of the chart's network isolation."""
        self._spawn(
            "kube-router",
            [
                str(self.plane.bin_dir / "kube-router"),
                f"--kubeconfig={self.plane.kubeconfig('admin')}",
                "--run-firewall=true",
                "--run-router=false",
                "--run-service-proxy=false",
                "--enable-cni=false",
                "--enable-ipv6=false",
                f"--hostname-override={NODE_NAME}",
                "--health-port=0",
            ],
        )

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited: {self.log(name)[-3000:]}")
            try:
                node = self.plane.request("GET", f"/api/v1/nodes/{NODE_NAME}")
            except RuntimeError:
                node = None
            if node and any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in node.get("status", {}).get("conditions", [])
            ):
                return
            time.sleep(0.5)
        raise TimeoutError(f"node not Ready in {timeout_s} s: {self.log('kubelet')[-3000:]}")
