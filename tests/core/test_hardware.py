"""The device database against docs/reference/hardware.md."""

from __future__ import annotations

import pytest

from gpuperf_gui.core.hardware import (
    PrecisionUnavailableError,
    UnknownDeviceError,
    estimate_cpu_peak,
    load_database,
    match_device_name,
)

CONTRACT_IDS = ["t4", "v100-sxm2", "a10", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "l4",
                "l40s", "rtx-3090", "rtx-4090", "h100-sxm", "h100-pcie", "h200", "b200", "gb200",
                "mi250x", "mi300x", "mi325x", "cpu"]


@pytest.fixture(autouse=True)
def _no_saved_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture
def db():
    return load_database()


def test_every_contract_id_present_with_sources(db):
    assert set(CONTRACT_IDS) <= set(db.ids())
    for device_id in CONTRACT_IDS:
        assert db.get(device_id).sources, device_id


@pytest.mark.parametrize("device_id,precision,ridge", [
    ("h100-sxm", "bf16", 295.3),  # 989.4 / 3.35 (hardware.md sanity check)
    ("h200", "bf16", 206.1),      # 989.4 / 4.8
    ("t4", "fp16", 203.1),        # 65 / 0.320
    ("a100-sxm-80gb", "bf16", 153.0),
])
def test_ridge_points(db, device_id, precision, ridge):
    assert db.get(device_id).ridge_flops_per_byte(precision) == pytest.approx(ridge, abs=0.1)


def test_dense_peaks_never_sparse(db):
    h100 = db.get("h100-sxm")
    assert h100.peak_flops_per_s("bf16") == pytest.approx(989.4e12)
    assert h100.sparse_flops_per_s["bf16"] == pytest.approx(1979e12)
    for device in db.devices():
        for precision, sparse in device.sparse_flops_per_s.items():
            assert device.dense_flops_per_s[precision] < sparse, (device.id, precision)


def test_geforce_uses_fp32_accumulate_rate(db):
    assert db.get("rtx-3090").peak_flops_per_s("bf16") == pytest.approx(71e12)
    assert db.get("rtx-4090").peak_flops_per_s("fp16") == pytest.approx(165.2e12)


def test_missing_precision_is_a_clear_error(db):
    with pytest.raises(PrecisionUnavailableError, match="no dense bf16"):
        db.get("t4").peak_flops_per_s("bf16")  # Turing has no bf16
    with pytest.raises(PrecisionUnavailableError, match="not known until measured"):
        db.get("cpu").peak_flops_per_s("fp32")


def test_unknown_device_lists_close_matches(db):
    with pytest.raises(UnknownDeviceError, match="did you mean h200"):
        db.get("h20")


@pytest.mark.parametrize("name,device_id", [
    ("NVIDIA H200", "h200"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2"),
    ("Tesla V100-DGXS-32GB", "v100-sxm2"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L4", "l4"),
    ("Tesla T4", "t4"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA GeForce RTX 2080 Ti", None),
])
def test_name_matching(db, name, device_id):
    assert match_device_name(name, db) == device_id


def test_user_file_adds_and_overrides(tmp_path):
    user = tmp_path / "devices.toml"
    user.write_text('[h200]\nname = "My H200 at 600 W"\nmemory_bandwidth_tbs = 4.0\n'
                    'tflops = { bf16 = 900 }\n\n[my-gpu]\nname = "Lab card"\n'
                    'memory_bandwidth_tbs = 1.0\ntflops = { fp32 = 10 }\n')
    db = load_database(user)
    assert db.errors == []
    assert db.get("h200").ridge_flops_per_byte("bf16") == pytest.approx(225.0)
    assert db.get("h200").origin == "user file"
    assert db.get("my-gpu").peak_flops_per_s("fp32") == pytest.approx(10e12)
    assert db.get("h100-sxm").origin == "datasheet"  # the rest still shipped


def test_bad_user_file_names_file_and_line_and_shipped_still_loads(tmp_path):
    user = tmp_path / "devices.toml"
    user.write_text('[ok-gpu]\nname = "fine"\n\n[broken]\nname = "x"\ntflops = { bf16 = "fast" }\n')
    db = load_database(user)
    assert len(db.errors) == 1
    assert str(user) in db.errors[0] and "line 4" in db.errors[0] and "bf16" in db.errors[0]
    assert "h200" in db.ids() and "broken" not in db.ids()


def test_toml_syntax_error_names_line(tmp_path):
    user = tmp_path / "devices.toml"
    user.write_text('[a]\nname = "x"\nmemory_bandwidth_tbs = = 3\n')
    db = load_database(user)
    assert str(user) in db.errors[0] and "line 3" in db.errors[0]
    assert "h100-sxm" in db.ids()


def test_cpu_estimate_from_cpuinfo():
    text = "processor : 0\ncpu MHz : 3000.000\nflags : fpu sse avx2 fma\n"
    estimate = estimate_cpu_peak(text)
    assert estimate.vector_isa == "AVX2+FMA"
    assert estimate.fp32_flops_per_cycle == 32  # 2 FMA units x 8 lanes x 2 FLOPs
    assert estimate.clock_hz == 3e9


def test_saved_cpu_ceilings_become_the_cpu_roofline_only_when_asked(tmp_path):
    from gpuperf_gui.core.bench.ceilings import MeasuredCeilings, save_ceilings
    from gpuperf_gui.core.catalog import DeviceCatalog

    save_ceilings(MeasuredCeilings("cpu", matmul_flops_per_s={"fp32": 2.9e11, "bf16": 9.5e11},
                                   bandwidth_bytes_per_s=1.25e10, threads=16, method="cpu-perf_counter"))
    assert load_database().get("cpu").dense_flops_per_s == {}  # loading the database reads no measurements
    assert DeviceCatalog.load().device("cpu").dense_flops_per_s == {}
    catalog = DeviceCatalog.load(saved_measurements=True)
    cpu = catalog.device("cpu")
    assert cpu.origin == "measured" and cpu.measured_with == "16 CPU threads, cpu-perf_counter"
    assert cpu.ridge_flops_per_byte("fp32") == pytest.approx(2.9e11 / 1.25e10)
    h200 = catalog.device("h200")
    assert h200.origin == "datasheet"  # GPUs keep their datasheet peak as the denominator
    again = catalog.database.with_measured("cpu", {"fp32": 3e11}, None)
    assert again.name == "This computer's CPU (measured)"  # said once, however often re-measured


def test_cpu_estimate_counts_physical_cores_not_threads():
    block = "processor : {n}\nphysical id : 0\ncore id : {core}\ncpu MHz : 2000.0\nflags : avx2 fma\n"
    text = "\n".join(block.format(n=n, core=n // 2) for n in range(8))  # 4 cores, 2 threads each
    assert estimate_cpu_peak(text).cores == 4


# What an independent check of the database found (docs/conventions.md, Device database) --------------------------------------

def test_h200_l2_and_memory_as_the_device_itself_reports(db):
    """The H200 of tests/data/shared_traces/h200/ceilings.json (torch.cuda.get_device_properties on
    the device) reports L2 62,914,560 B (60 MiB, not 50) and 150,109,880,320 B of memory: more than
    141e9, so the datasheet's "141 GB" means GiB (151.4e9 B, some of it reserved)."""
    import json
    from pathlib import Path
    seen = json.loads((Path(__file__).parents[1] / "data/shared_traces/h200/ceilings.json").read_text())
    h200 = db.get("h200")
    assert h200.l2_bytes == seen["l2_bytes"] == 62_914_560
    assert h200.memory_unit == "GiB" and h200.memory_bytes == 141 * 2**30
    assert 141e9 < seen["mem_bytes"] <= h200.memory_bytes


def test_gpu_capacities_are_stated_in_the_vendor_unit(db):
    for device in db.devices():
        if device.vendor in ("nvidia", "amd") and device.memory_bytes:
            assert device.memory_unit == "GiB", device.id  # HBM/GDDR capacities are binary


@pytest.mark.parametrize("device_id,precision,dense_tflops,sparse_tflops", [
    ("b200", "fp4", 9000, 18000),    # hardware.md: B200 "FP4 9 PF (18*)"
    ("gb200", "fp4", 10000, 20000),  # hardware.md: GB200 "FP4 10 PF (20*)"
])
def test_fp4_peaks(db, device_id, precision, dense_tflops, sparse_tflops):
    device = db.get(device_id)
    assert device.peak_flops_per_s(precision) == pytest.approx(dense_tflops * 1e12)
    assert device.sparse_flops_per_s[precision] == pytest.approx(sparse_tflops * 1e12)


def test_mi250x_fp32_matrix_per_gcd(db):
    # hardware.md: per package FP32 vector 47.9, FP32 matrix 95.7; torch sees one GCD (half)
    mi = db.get("mi250x")
    assert mi.peak_flops_per_s("fp32") == pytest.approx(23.95e12)
    assert mi.peak_flops_per_s("fp32_tensor") == pytest.approx(95.7e12 / 2, rel=1e-3)


def test_a100_pcie_40gb(db):
    # hardware.md: A100 PCIe 40 GB: 40 GB HBM2, 1.555 TB/s, same datasheet compute as SXM
    assert match_device_name("NVIDIA A100-PCIE-40GB", db) == "a100-pcie-40gb"
    pcie = db.get("a100-pcie-40gb")
    assert pcie.memory_bandwidth_bytes_per_s == pytest.approx(1.555e12)
    assert pcie.memory_bytes == 40 * 2**30 and pcie.sources
    assert pcie.peak_flops_per_s("bf16") == db.get("a100-sxm-40gb").peak_flops_per_s("bf16") == 312e12


def test_memory_unit_must_be_known(tmp_path):
    from gpuperf_gui.core.hardware import parse_devices
    with pytest.raises(Exception, match="memory_unit"):
        parse_devices('[x]\nname = "x"\nmemory_gb = 8\nmemory_unit = "MB"\n', "user file", "devices.toml")
    (dev,) = parse_devices('[x]\nname = "x"\nmemory_gb = 8\n', "user file", "devices.toml").values()
    assert dev.memory_bytes == 8e9 and dev.memory_unit == "GB"
