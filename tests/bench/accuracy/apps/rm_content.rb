# tests/bench/accuracy/apps/rm_content.rb - the Redmine accuracy app's
# content, run by redmine.sh with `rails runner` after db:migrate and
# redmine:load_default_data: a public project `bench` (issue tracking
# only), RM_ISSUES issues (ids 1..RM_ISSUES, text from WORDS so a search
# for any of rm_load.py's words finds issues, random tracker, priority and
# status), RM_NOTES notes spread over them, a user `reporter` (member,
# first builtin role) whose API key is RM_API_KEY, the REST API on and
# anonymous reading allowed. Deterministic text (fixed seed RM_SEED).
# Must never send mail (deliveries off) nor touch another project.
seed = Integer(ENV.fetch('RM_SEED', '7'))
n_issues = Integer(ENV.fetch('RM_ISSUES', '1000'))
n_notes = Integer(ENV.fetch('RM_NOTES', '2000'))
api_key = ENV.fetch('RM_API_KEY')
ActionMailer::Base.perform_deliveries = false
rng = Random.new(seed)
words = %w[cloud latency replay cache kernel socket thread queue buffer index server client packet
           schedule median tail budget instance region storage memory compute network disk backup
           deploy rollback metric trace sample label plan driver emulate container]
text = ->(n) { Array.new(n) { words[rng.rand(words.size)] }.join(' ') }
Setting.rest_api_enabled = '1'
Setting.login_required = '0'
Setting.notified_events = []
admin = User.find_by_login('admin')
admin.update_columns(must_change_passwd: false)
reporter = User.new(firstname: 'Load', lastname: 'Reporter', mail: 'reporter@example.org', language: 'en')
reporter.login = 'reporter'
reporter.password = reporter.password_confirmation = 'reporter-pass'
reporter.save!
Token.create!(user: reporter, action: 'api').update_column(:value, api_key) # create! draws a random one
project = Project.new(name: 'Bench', identifier: 'bench', is_public: true, description: text.call(30))
project.enabled_module_names = %w[issue_tracking]
project.trackers = Tracker.all
project.save!
Member.create!(project: project, principal: reporter, roles: [Role.givable.order(:position).first])
trackers = Tracker.order(:id).to_a
prios = IssuePriority.order(:id).to_a
statuses = IssueStatus.order(:id).to_a
User.current = admin
Issue.transaction do
  n_issues.times do |i|
    issue = Issue.new(project: project, tracker: trackers[i % trackers.size], author: admin,
                      priority: prios[rng.rand(prios.size)], subject: text.call(6).capitalize,
                      description: Array.new(1 + rng.rand(4)) { text.call(20 + rng.rand(80)) }.join("\n\n"))
    issue.save!
    status = statuses[rng.rand(statuses.size)]
    issue.update_columns(status_id: status.id) if status.id != issue.status_id
  end
end
ids = Issue.where(project: project).order(:id).pluck(:id)
Journal.transaction do
  n_notes.times do
    Journal.create!(journalized: Issue.find(ids[rng.rand(ids.size)]), user: admin, notes: text.call(10 + rng.rand(40)))
  end
end
puts "rm_content: project bench, #{ids.size} issues (ids #{ids.min}..#{ids.max}), #{Journal.count} notes"
