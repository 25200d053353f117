// Package thread is the runtime beside the graph engine (package graph):
// what keeps a store's threads going between the runs of the engine. Its
// Waker wakes the paused threads whose interrupts passed their deadline,
// in every process that serves the store, so that a thread waiting for an
// answer that never comes goes on without it.
package thread
