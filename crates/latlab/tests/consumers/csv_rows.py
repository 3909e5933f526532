"""Reads a CSV file with Python's csv module (RFC 4180 quoting, the first line as the
header) and prints its rows as a JSON list of {column: cell} objects."""
import csv
import json
import sys

with open(sys.argv[1], newline="", encoding="utf-8") as f:
    print(json.dumps(list(csv.DictReader(f))))
