"""The site's side of an HTTP client's conversation: routes that exercise a client, and what
the site saw of the clients.

`routes` (`/redirect/{n}`, `/redirect-loop`, `/big/{nbytes}`, `/echo`, `/set-cookie`, `/health`)
and `traffic` (every request counted by path, status and Host header: `/control/requests`).
"""
