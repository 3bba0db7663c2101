"""A figure over a report's iterations, as the study tables print it."""

# Two-sided Student t quantiles (df 1..10) for the levels -I usually asks for; beyond 10
# degrees of freedom the df=10 value is a slight overestimate, which errs on the safe side.
T = {0.90: [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812],
     0.95: [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228],
     0.99: [63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169]}

def fig(r, name, scale=1.0, prec=2):
    """Mean over iterations, with the confidence half-width at the run's level when it iterated."""
    xs = [it[name] * scale for it in r["iterations"] if it.get(name) is not None]
    if not xs:
        return "-"
    n, mean = len(xs), sum(xs) / len(xs)
    c = r.get("confidence")
    level = round(c["target"]["level"], 2) if c else None
    if n < 2 or level not in T:
        return f"{mean:.{prec}f}"
    sd = (sum((x - mean) ** 2 for x in xs) / (n - 1)) ** 0.5
    hw = T[level][min(n - 1, 10) - 1] * sd / n ** 0.5
    return f"{mean:.{prec}f} ± {hw:.{prec}f}"
