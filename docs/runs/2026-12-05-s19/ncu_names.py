# Summarises ncu --csv (gpu__time_duration.sum): the last `per_pass` kernels grouped by name and
# grid, in first-seen order: calls, total and mean microseconds.
import csv, sys
path = sys.argv[1]; per_pass = int(sys.argv[2])
with open(path) as f:
    lines = [l for l in f if l.startswith('"')]
rows = [r for r in csv.DictReader(lines) if r.get('Metric Name') == 'gpu__time_duration.sum']
last = rows[-per_pass:] if per_pass > 0 else rows
groups, order = {}, []
for i, r in enumerate(last):
    key = (r['Kernel Name'][:60], r['Grid Size'], r['Block Size'])
    if key not in groups:
        groups[key] = [0, 0.0]; order.append(key)
    groups[key][0] += 1; groups[key][1] += float(r['Metric Value'].replace(',', '')) / 1e3
total = sum(g[1] for g in groups.values())
print(f"{len(rows)} kernels in file; last {len(last)}: {total:.1f} us")
for key in sorted(order, key=lambda k: -groups[k][1]):
    n, us = groups[key]
    print(f"  {key[0]:60s} grid {key[1]:>14} block {key[2]:>12}: {n:4d} calls {us:8.1f} us mean {us/n:6.2f}")
