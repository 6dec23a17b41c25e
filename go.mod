module github.com/gpuspans/gpuspans

go 1.19
