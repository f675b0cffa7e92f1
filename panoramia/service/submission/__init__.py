"""What a request must pass before an audit is queued: its command line, its price, the
service's resource limits and the contributor's stored bytes."""
