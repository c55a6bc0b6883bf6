// Package auth owns who may do what on NATS: the roles of Holdover's
// processes and the least-privilege permissions of each (roles.go, every
// subject with its reason), the operator, tenant accounts and per-role
// user credentials that carry them (`holdover auth init`), and the server
// options that enforce them.
//
// Every permission is built from the names in package streams, so a
// renamed subject, stream or consumer changes the permissions with it.
// Each tenant is two NATS accounts (accounts.go): a data account with the
// JetStream topology and a clients account with every role's user, which
// reaches the data only through imports made for it alone. Nothing crosses
// between tenants.
package auth
