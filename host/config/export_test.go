package config

// The tests of package config_test, which reads the provider kinds (they
// import this package, so only an external test can import them), share
// these helpers.
var (
	MustParse     = mustParse
	EqualProfile  = equalProfile
	WeatherSum    = weatherSum
	DesignExample = designExample
)
