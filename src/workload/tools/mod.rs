//! External tools: sysbench, pgbench, YCSB / go-ycsb output, any command.
