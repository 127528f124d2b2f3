module github.com/proofgate/proofgate/scripts/actart

go 1.26

require github.com/nektos/act v0.2.87

require (
	github.com/golang-jwt/jwt/v5 v5.3.0 // indirect
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	golang.org/x/sys v0.40.0 // indirect
	google.golang.org/protobuf v1.36.9 // indirect
)
