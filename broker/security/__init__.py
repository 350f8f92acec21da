"""The ACL authorizer and the credential/ACL store."""
