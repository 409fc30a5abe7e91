"""Closed forms the simulation (analysis/queueing.py) is checked against: M/M/c and M/M/1 sojourn times.

M/M/c is one shared queue in front of c workers (Poisson arrivals, exponential service); N separate M/M/1
queues fed at random are what a uniform hash gives each worker. Time is in units of the mean service.
"""

from __future__ import annotations

import math


def erlang_c(servers: int, load: float) -> float:
    """The chance an arrival waits in M/M/c: `load` = λ/μ offered erlangs (< servers)."""
    if not 0 <= load < servers:
        raise ValueError("need 0 <= load < servers for a stable queue")
    term, total = 1.0, 1.0  # load^k / k!, summed for k < servers
    for k in range(1, servers):
        term *= load / k
        total += term
    last = term * load / servers * servers / (servers - load)  # load^c / c! · c / (c - load)
    return last / (total + last)


def mmc_sojourn_tail(servers: int, rho: float, t: float, mean_service: float = 1.0) -> float:
    """P(sojourn > t) in M/M/c at utilisation rho: wait (0 with 1 - C, else Exp(cμ - λ)) plus Exp(μ)."""
    mu = 1 / mean_service
    lam = rho * servers * mu
    c = erlang_c(servers, lam / mu)
    a = servers * mu - lam  # the rate of the wait, given that there is one
    no_wait = math.exp(-mu * t)
    if math.isclose(a, mu):
        waited = (1 + mu * t) * math.exp(-mu * t)
    else:  # the sum of two exponentials: hypoexponential tail
        waited = (a * math.exp(-mu * t) - mu * math.exp(-a * t)) / (a - mu)
    return (1 - c) * no_wait + c * waited


def mmc_sojourn_quantile(servers: int, rho: float, q: float, mean_service: float = 1.0) -> float:
    """The q-th percentile (0 < q < 100) of the M/M/c sojourn time, by bisection on its tail."""
    target = 1 - q / 100
    lo, hi = 0.0, mean_service
    while mmc_sojourn_tail(servers, rho, hi, mean_service) > target:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if mmc_sojourn_tail(servers, rho, mid, mean_service) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mm1_sojourn_quantile(rho: float, q: float, mean_service: float = 1.0) -> float:
    """The q-th percentile of the M/M/1 sojourn time: exponential with rate μ - λ. A worker of N behind a
    uniform hash at total utilisation rho is an M/M/1 queue at rho (random splitting keeps it Poisson)."""
    if not 0 <= rho < 1:
        raise ValueError("need 0 <= rho < 1 for a stable queue")
    return -math.log(1 - q / 100) * mean_service / (1 - rho)


def mmc_mean_sojourn(servers: int, rho: float, mean_service: float = 1.0) -> float:
    """Mean sojourn in M/M/c: S + C / (cμ - λ)."""
    mu = 1 / mean_service
    return mean_service + erlang_c(servers, rho * servers) / (servers * mu - rho * servers * mu)
