"""I/O clients: object storage for raw sources, warehouses and their load protocol, rate limits
per system, and the masking of credentials in anything printed or stored."""
