"""Notices to a tenant's contact (offboarding's start and completion notices): sent by mail through
the platform's relay (`smtp`), each recorded in the tenant's retention ledger and sent once
(`delivery`)."""
