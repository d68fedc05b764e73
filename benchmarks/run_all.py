"""Every benchmark in turn; each prints `name value unit [target ratio OK|MISSED]` lines.

Run: make bench   (or python -m benchmarks.run_all)
"""

from benchmarks import bench_abstention, bench_api, bench_core, bench_index, bench_load, bench_model, bench_scale

if __name__ == "__main__":
    for module in (bench_core, bench_api, bench_index, bench_scale, bench_abstention, bench_model, bench_load):
        print(f"\n## {module.__name__}", flush=True)
        module.main()
