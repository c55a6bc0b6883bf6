// Package auth owns who may do what on NATS: the roles of Holdover's
// processes and the least-privilege permissions of each (roles.go, every
// subject with its reason), the operator, tenant accounts and per-role
// user credentials that carry them (`holdover auth init`), and the server
// options that enforce them.
//
// Every permission is built from the names in package streams, so a
// renamed subject, stream or consumer changes the permissions with it.
// One NATS account per tenant keeps tenants apart: nothing is exported or
// imported between accounts.
package auth
