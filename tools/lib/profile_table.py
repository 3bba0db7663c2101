# Shared by the lab studies' table writers (tools/*-study): the sender's kernel cost
# profile (ringperf --profile, `local.profile` in the JSON) as a markdown table with a row
# per category and, for each configuration, the category's cost per unit of work.


def profile_of(report):
    """The sending (local) side's profile, or None; and why it is missing."""
    p = (report.get("local") or {}).get("profile")
    if not p:
        return None, "the run took no profile"
    if p.get("unavailable"):
        return None, p["unavailable"]
    return p, None


def cost_table(columns, units, diff=None):
    """columns: [(label, report)]; units: [(heading, field of a category entry, precision)].
    A row per category any configuration sampled, the largest share in the first
    configuration first, then an "all busy CPU" row with the side's whole service demand.
    diff: (heading, field, precision, index_a, index_b), a last column with column b's cost
    minus column a's. Returns the table's lines (a note line instead when no column has a
    profile)."""
    profiles = []
    for label, report in columns:
        p, why = profile_of(report)
        profiles.append(p)
        if p is None:
            print(f"{label}: no profile: {why}", file=sys.stderr)
    if all(p is None for p in profiles):
        return ["No kernel cost profile: " + "; ".join(
            f"{label}: {profile_of(r)[1]}" for label, r in columns) + "."]
    order = []
    for p in profiles:
        for c in sorted((p or {}).get("categories", []), key=lambda c: -c["share_percent"]):
            if c["category"] not in order:
                order.append(c["category"])

    def cell(p, category, field, prec):
        if p is None:
            return None
        entry = next((c for c in p["categories"] if c["category"] == category), None)
        # A category without samples in this run cost nothing there.
        return 0.0 if entry is None else entry.get(field)

    def fmt(v, prec):
        return "-" if v is None else f"{v:.{prec}f}"

    head = ["category"] + [f"{label} {h}" for label, _ in columns for h, _, _ in units]
    if diff:
        head.append(diff[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for category in order:
        row = [category] + [fmt(cell(p, category, f, prec), prec) for p in profiles for _, f, prec in units]
        if diff:
            _, f, prec, a, b = diff
            va, vb = cell(profiles[a], category, f, prec), cell(profiles[b], category, f, prec)
            row.append("-" if va is None or vb is None else f"{vb - va:+.{prec}f}")
        lines.append("| " + " | ".join(row) + " |")
    # The whole: the categories' costs add up to it (within rounding).
    total = ["all busy CPU"]
    for (_, report), p in zip(columns, profiles):
        sd = report["local"].get("service_demand") or {}
        udp = report["local"].get("udp") or {}
        whole = {"us_per_kb": sd.get("us_per_kb"), "ns_per_segment": sd.get("ns_per_segment"),
                 "us_per_transaction": sd.get("us_per_transaction"),
                 "ns_per_datagram": None if udp.get("us_per_datagram") is None else udp["us_per_datagram"] * 1e3}
        total += [fmt(whole.get(f), prec) for _, f, prec in units]
    if diff:
        total.append("")
    lines.append("| " + " | ".join(total) + " |")
    return lines
