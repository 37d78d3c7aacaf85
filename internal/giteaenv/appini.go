package giteaenv

import "text/template"

// appINI is the configuration of a test Gitea: everything under the work
// path, SQLite, listening on 127.0.0.1 only, nothing that reaches out of
// the machine (OFFLINE_MODE; Gravatar and federated avatars are off by
// default, and set in the admin panel now), nothing the tests do not use (SSH, LFS, Actions, packages,
// OAuth2 provider, indexers, crons), and immediate queues, so the
// conflict check of a new pull request is done when the API answers and
// a test can merge it at once (Gitea's own integration tests do the same).
var appINI = template.Must(template.New("app.ini").Parse(`APP_NAME = crowsnest tests
RUN_MODE = prod
WORK_PATH = {{.WorkPath}}
{{- if .Root}}
; The tests run as root in CI; Gitea refuses that unless told.
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
{{- end}}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {{.Port}}
DOMAIN = 127.0.0.1
ROOT_URL = {{.URL}}
LOCAL_ROOT_URL = {{.URL}}
APP_DATA_PATH = {{.WorkPath}}/data
STATIC_ROOT_PATH = {{.StaticRoot}}
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = {{.WorkPath}}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = {{.WorkPath}}/repositories
DEFAULT_BRANCH = main

[repository.signing]
SIGNING_KEY = none

[security]
INSTALL_LOCK = true
SECRET_KEY = {{.SecretKey}}
INTERNAL_TOKEN = {{.InternalToken}}

[service]
DISABLE_REGISTRATION = true
REGISTER_EMAIL_CONFIRM = false
ENABLE_NOTIFY_MAIL = false
ENABLE_CAPTCHA = false
NO_REPLY_ADDRESS = noreply.example.test

[mailer]
ENABLED = false

[oauth2]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[api]
ENABLE_SWAGGER = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[queue]
TYPE = immediate

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = console
LEVEL = Info
`))
