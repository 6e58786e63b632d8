"""The reference interpreter: runs stg programs numerically with torch on the CPU."""
