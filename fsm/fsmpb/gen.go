package fsmpb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative fsm.proto
