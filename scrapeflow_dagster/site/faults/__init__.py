"""Failures the site serves so that a client's retries, timeouts and checks can be tested.

`stateless` (`/status/{code}`, `/retry-after/{s}`, `/slow/{s}`, `/captcha`, `/reset`,
`/truncated`, and the fault answers the others reuse), `mixed` (`/mixed/{n}`: pages with a
seeded share of transient faults) and `named` (`/flaky/{name}`, `/timed/{name}`: faults with
state per name, set and read through control routes).
"""
