// Package tenancy decides what an Application may use of crowsnest's
// privileges, since whoever may edit an Application writes its
// annotations: which registries its images may name, which credentials
// (pull secrets, git:secret:) it may borrow, which Git repositories its
// write-back may push to (its AppProject's sourceRepos, matched as Argo
// CD matches them) and whether its AppProject admits its namespace at
// all. Rules are pure checks over the Application, its AppProject and the
// config's tenancy section; the controller hands them the AppProjects it
// watches (controller.EngineView) and applies them before any registry
// request or write-back.
package tenancy
