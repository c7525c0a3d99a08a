"""Print per-column statistics of a CSV file: python summarize.py FILE.csv"""

import csv
import statistics
import sys

with open(sys.argv[1], newline="", encoding="utf-8") as handle:
    rows = list(csv.DictReader(handle))
for column in rows[0] if rows else []:
    values = [row[column] for row in rows]
    try:
        numbers = [float(value) for value in values]
    except ValueError:
        print(f"{column}: text, {len(set(values))} distinct values")
        continue
    print(f"{column}: number, min {min(numbers)}, mean {statistics.fmean(numbers):.2f}, max {max(numbers)}")
print(f"rows: {len(rows)}")
