// Package memo keeps what is worth not computing again for a thread that
// grows: a value per thread within bounds (PerThread), and a value folded
// over a thread's messages that folds in only what was added (Fold). It
// sits beside package message, whose types it keeps, so that the message
// package holds the messages and their rules alone.
package memo
