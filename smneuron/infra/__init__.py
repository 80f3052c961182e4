"""The CloudFormation templates in infra/: render, deploy with change sets, outputs into smneuron.yaml.

May import: errors, session, catalog, specs, artifact, endpoints.
"""
