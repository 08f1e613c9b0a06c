//! Facts about this machine: CPUs online, RAM, MemAvailable, cgroup version, kernel.
