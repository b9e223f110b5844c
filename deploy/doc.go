// Package deploy holds no code: its tests (template_test.go) check the AWS
// SAM template (template.yaml) and its build targets (mk/sam.mk) against the
// code — environment names, IAM scope, the DynamoDB key schema, the
// streaming settings of the function URL and the REST API.
package deploy
