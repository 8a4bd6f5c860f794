"""The sim's `nvidia-smi`: `--query-gpu=...`, `--query-compute-apps=...` with
`--format=csv[,noheader][,nounits]`, `-L`, `-i N`, and the plain table view, from the GPU ledger.

CSV shape as nvidia-smi prints it: fields joined by `", "`, MiB/`%` units unless `nounits`, header
`memory.used [MiB]`, `used_gpu_memory [MiB]`; no line at all when no compute app runs. A GPU marked
lost (Xid 79 fault) makes the whole command fail with `Unable to determine the device handle for
GPU<bus id>: Unknown Error` (exit 15) — that wording is from public reports, not driver source.
"""

from __future__ import annotations

import time

from simhost import gpu
from simhost.tools.streams import err, out, sim_dir

# A process per call (the bot's GPU probes, ~900 per `make test`): no pathlib (simhost.gpu says why).

DRIVER = "580.95.05"
CUDA = "13.0"
BUS_IDS = ["00000000:01:00.0", "00000000:21:00.0", "00000000:41:00.0", "00000000:61:00.0",
           "00000000:81:00.0", "00000000:A1:00.0", "00000000:C1:00.0", "00000000:E1:00.0"]
GPU_FIELDS = {"index", "name", "uuid", "pci.bus_id", "memory.used", "memory.total", "memory.free",
              "utilization.gpu", "utilization.memory", "temperature.gpu", "power.draw", "driver_version",
              "count", "persistence_mode"}
APP_FIELDS = {"pid", "process_name", "name", "used_memory", "used_gpu_memory", "gpu_uuid", "gpu_bus_id",
              "gpu_name"}


def uuid_of(index: int) -> str:
    return f"GPU-5c9e3a1{index}-7b2d-4f0e-9a61-0c3d8e2f{index:04x}"


def bus_id(index: int) -> str:
    return BUS_IDS[index % len(BUS_IDS)]


def main(argv: list[str]) -> int:
    root = sim_dir() or "."
    shape = gpu.read_shape(root)
    count = int(str(shape["count"]))
    total = int(str(shape["memory_mib"]))
    raw_lost = shape.get("lost")
    lost = [int(str(x)) for x in raw_lost] if isinstance(raw_lost, list) else []
    if lost:
        print(f"Unable to determine the device handle for GPU{bus_id(lost[0])}: Unknown Error", file=out())
        return 15
    query_gpu = query_apps = None
    fmt: set[str] = set()
    only: set[int] | None = None
    listing = False
    it = iter(argv)
    for arg in it:
        if arg.startswith("--query-gpu="):
            query_gpu = arg.split("=", 1)[1].split(",")
        elif arg.startswith("--query-compute-apps="):
            query_apps = arg.split("=", 1)[1].split(",")
        elif arg.startswith("--format="):
            fmt = set(arg.split("=", 1)[1].split(","))
        elif arg in ("-i", "--id"):
            only = {int(x) for x in next(it, "0").split(",")}
        elif arg.startswith("--id="):
            only = {int(x) for x in arg.split("=", 1)[1].split(",")}
        elif arg in ("-L", "--list-gpus"):
            listing = True
    indices = [i for i in range(count) if only is None or i in only]
    holders = gpu.holders(root)
    used = {i: 0 for i in range(count)}
    util = {i: 0 for i in range(count)}
    for h in holders:
        for i, mib in h.mib.items():
            if i in used:
                used[i] += mib
                util[i] = max(util[i], h.util.get(i, 0))
    if listing:
        for i in indices:
            print(f"GPU {i}: {shape['name']} (UUID: {uuid_of(i)})", file=out())
        return 0
    if query_gpu is not None or query_apps is not None:
        if "csv" not in fmt:
            print('"--format=" switch is missing. Please use --format=csv.', file=err())
            return 2
        units = "nounits" not in fmt
        fields = query_gpu if query_gpu is not None else query_apps or []
        valid = GPU_FIELDS if query_gpu is not None else APP_FIELDS
        for field in fields:
            if field not in valid:
                print(f'Field "{field}" is not a valid field to query.\n', file=out())
                return 2
        rows: list[list[str]] = []
        if query_gpu is not None:
            for i in indices:
                rows.append([_gpu_value(f, i, shape, used[i], total, util[i], units, count) for f in fields])
        else:
            for i in indices:
                for h in holders:
                    if i in h.mib:
                        rows.append([_app_value(f, i, h, units, shape) for f in fields])
        if "noheader" not in fmt:
            print(", ".join(_header(f, units) for f in fields), file=out())
        for row in rows:
            print(", ".join(row), file=out())
        return 0
    print_table(shape, indices, used, util, total, holders)
    return 0


def _header(field: str, units: bool) -> str:
    unit = {"memory.used": "MiB", "memory.total": "MiB", "memory.free": "MiB", "used_memory": "MiB",
            "used_gpu_memory": "MiB", "utilization.gpu": "%", "utilization.memory": "%", "power.draw": "W"}
    name = "used_gpu_memory" if field == "used_memory" else field
    return f"{name} [{unit[field]}]" if field in unit else name


def _gpu_value(field: str, i: int, shape: dict[str, object], used: int, total: int, util: int,
               units: bool, count: int) -> str:
    mib = " MiB" if units else ""
    pct = " %" if units else ""
    values = {
        "index": str(i), "name": str(shape["name"]), "uuid": uuid_of(i), "pci.bus_id": bus_id(i),
        "memory.used": f"{used}{mib}", "memory.total": f"{total}{mib}", "memory.free": f"{max(0, total - used)}{mib}",
        "utilization.gpu": f"{util}{pct}", "utilization.memory": f"{util // 2}{pct}",
        "temperature.gpu": str(34 + util // 3), "power.draw": f"{(65 + util * 5.2):.2f}{' W' if units else ''}",
        "driver_version": DRIVER, "count": str(count), "persistence_mode": "Enabled",
    }
    return values[field]


def _app_value(field: str, i: int, h: gpu.Holder, units: bool, shape: dict[str, object]) -> str:
    values = {"pid": str(h.pid), "process_name": h.name, "name": h.name,
              "used_memory": f"{h.mib[i]}{' MiB' if units else ''}",
              "used_gpu_memory": f"{h.mib[i]}{' MiB' if units else ''}", "gpu_uuid": uuid_of(i),
              "gpu_bus_id": bus_id(i), "gpu_name": str(shape["name"])}
    return values[field]


def print_table(shape: dict[str, object], indices: list[int], used: dict[int, int], util: dict[int, int],
                total: int, holders: list[gpu.Holder]) -> None:
    line = "+-----------------------------------------------------------------------------------------+"
    print(time.strftime("%a %b %d %H:%M:%S %Y"), file=out())
    print(line, file=out())
    print(f"| NVIDIA-SMI {DRIVER}              Driver Version: {DRIVER}      CUDA Version: {CUDA}     |", file=out())
    print("|-----------------------------------------+------------------------+----------------------+", file=out())
    print("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |", file=out())
    print("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |", file=out())
    print("|                                         |                        |               MIG M. |", file=out())
    print("|=========================================+========================+======================|", file=out())
    name = str(shape["name"])[:20]
    for i in indices:
        mem = f"{used[i]}MiB / {total}MiB"
        print(f"| {i:>3}  {name:<20}           On  | {bus_id(i)[4:]:<16} Off |                  Off |", file=out())
        print(f"| 30%   {34 + util[i] // 3:>2}C    P{1 if util[i] else 8:<2}        {65 + util[i] * 5:>4}W /  600W | "
              f"{mem:>22} | {util[i]:>6}%      Default |", file=out())
        print("|                                         |                        |                  N/A |", file=out())
        print("+-----------------------------------------+------------------------+----------------------+", file=out())
    print(file=out())
    print(line, file=out())
    print("| Processes:                                                                              |", file=out())
    print("|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |", file=out())
    print("|        ID   ID                                                               Usage      |", file=out())
    print("|=========================================================================================|", file=out())
    rows = [(i, h) for i in indices for h in holders if i in h.mib]
    if not rows:
        print("|  No running processes found                                                             |", file=out())
    for i, h in rows:
        print(f"|  {i:>3}   N/A  N/A  {h.pid:>15}      C   {h.name[:34]:<34} {h.mib[i]:>7}MiB |", file=out())
    print(line, file=out())
