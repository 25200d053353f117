package builtin

// Name is the provider name the builtin tools are listed and logged under,
// and the argument `tenxgraph plugin` serves them by.
const Name = "builtin"

// Version is the provider's version as reported in its metadata, so a host
// log tells which tool behaviour a run saw.
const Version = "0.2.0"
