module github.com/tenxgraph/tenxgraph

go 1.26

require github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
