"""The sandbox's mail relay: a real SMTP server (aiosmtpd's) that the customer notices go through,
delivering every message into a local Maildir, where tests and operators read what a customer
received."""
