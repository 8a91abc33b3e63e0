module github.com/metad/metad

go 1.26.8

require (
	github.com/google/btree v1.1.3
	google.golang.org/protobuf v1.36.12
)
