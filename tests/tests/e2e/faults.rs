//! Fault tests (issue #4): the roles run as real `datajump` processes that the
//! tests kill with SIGKILL, and nats-server and PostgreSQL are restarted under
//! them. PostgreSQL only, one nats-server version (DESIGN.md "Testing").
